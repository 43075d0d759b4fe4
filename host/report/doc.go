// Package report turns engine results into the paper's tables (terminal and
// Markdown, drawn with tablewriter), results.json, a CSV with a row per
// record, and the run directory that holds them.
//
// The outputs (for C > 1 channels, report/channels.go: the section "Per-
// channel localisation" and records.csv's channel columns; none for one
// channel; report/html.go with html.js, html.css: report.html, one offline
// page (inline script and style written here, the data as JSON in the
// page, arrays base64) of the tables, the per-class IoU chart as inline
// SVG, a browser of report.Explored records, their member maps as exact
// float32 values (the heat map's colour and hover), and a recording's
// timeline of report.Windows; report/thin.go bounds the page: a record of
// more than MaxColumns = 1024 samples a channel is drawn in 1024 columns
// (a heat map cell the value of largest |R| of its samples, a line their
// min..max band, a mask cell any), a posterior of more than MaxTimeline =
// 1024 windows in 1024 bars (a run of windows: majority class, lowest
// probability and agreement, highest mutual information), the hover naming
// the samples or windows it aggregates).
package report
