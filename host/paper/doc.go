// Package paper holds the published values of the paper's tables
// (values.txt, transcribed from its LaTeX source) and matches the rows of
// a uaxai run to them, so that every table is printed with the paper's
// value beside ours.
//
// A method is matched by what it is, not by its label: a posterior,
// explainer or summary ID (and a quantile summary's alpha) gives a Method
// key ("ensemble", "occlusion", "q05"), and so does each name the paper
// uses for it ("Deep ensemble", "Deep ens.", "5% quantile", "5%").
//
// The paper's published tables (values.txt, transcribed from its source)
// and the matching of methods and classes to its rows;
// host/report.PaperTable prints a run's rows beside them.
package paper
