// Package figure draws the paper's figures as PNG with gonum.org/v1/plot:
// the qualitative panel of one record (Qualitative: the waveform with its
// ground-truth mask, the S member maps, and the summary maps of the
// push-forward, fig:qual_synthetic and fig:qual_real), the per-class
// IoU bar chart (PerClassBars) and the forest plot of estimates with
// their intervals (IntervalsPlot: each replicate's paired difference
// beside the across-replicate interval and the paper's). It takes plain
// slices and strings, no engine types, so the runner (or any other
// caller) fills a Panel, a Bars or an Intervals from whatever it holds.
//
// Relevance is shown with the cividis colour map (Cividis), masks in grey.
// Bad input data (mismatched lengths, NaN or Inf, empty series) is an
// error that names the series and index; nothing panics on data. The same
// input gives the same PNG bytes.
//
// The paper's figures as PNG from plain slices (gonum plot, 150 dpi):
// Qualitative (a record's waveform with its mask in grey, the S member
// maps and the mean, quantile, variance and CV maps as min-max scaled
// strips, each colour bar printing its range with the digits that tell its
// ends apart, a map constant to float32 rounding drawn in one mid colour
// with its value; a time tick every cycle, Fs/F0 samples; for C > 1
// channels a waveform row a channel with its own mask, a members' heatmap
// a channel, summary strips of a row a channel on one scale), PerClassBars
// (per-class IoU by method, SD error bars, the paper's values; the legend
// inside the image, its column as wide as its widest entry, in further
// columns when long) and TimelinePlot (a whole recording: the waveform
// shaded by each window's predicted class, probability and agreement,
// mutual information); the Cividis colour map (matplotlib's table).
package figure
