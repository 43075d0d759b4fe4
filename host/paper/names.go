package paper

import (
	"strconv"
	"strings"
)

// methodNames maps the normalised names the paper (and uaxai's plugin IDs)
// give a method to its key.
var methodNames = map[string]string{
	"deterministicbaseline": "deterministic", "det.": "deterministic", "deterministic": "deterministic", "posterior.deterministic": "deterministic",
	"deepensemble": "ensemble", "deepens.": "ensemble", "ensemble": "ensemble", "posterior.ensemble": "ensemble", "deepensembleloomin-max": "ensemble",
	"laplace": "laplace", "posterior.laplace": "laplace",
	"mcdropout": "mcdropout", "mcdrop.": "mcdropout", "posterior.mcdropout": "mcdropout",
	"grad-cam": "gradcam", "gradcam": "gradcam", "explainer.gradcam": "gradcam",
	"lime": "lime", "explainer.lime": "lime",
	"occlusion": "occlusion", "explainer.occlusion": "occlusion",
	"mean": "mean", "summary.mean": "mean",
	"variance": "variance", "var.": "variance", "summary.variance": "variance",
	"coeff.variation": "cv", "coeff.var.": "cv", "summary.cv": "cv", "cv": "cv",
}

// Method returns the key of a method name ("Deep ens.", "5% quantile",
// "posterior.ensemble", or a key itself), or "" if s names no method of
// the paper.
// Quantiles are "q05" .. "q95".
func Method(s string) string {
	n := norm(s)
	if k, ok := methodNames[n]; ok {
		return k
	}
	if len(n) == 3 && n[0] == 'q' && QuantileKey(float64(int(n[1]-'0')*10+int(n[2]-'0'))/100) == n {
		return n // a key is its own name
	}
	// "5% quantile", "5%", "25%" (norm keeps the digits and drops '%').
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(strings.ToLower(s)), "quantile"))
	if strings.HasSuffix(t, "%") {
		if p, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(t, "%"))); err == nil && p > 0 && p < 100 {
			return QuantileKey(float64(p) / 100)
		}
	}
	return ""
}

// QuantileKey is the method key of the alpha-quantile summary: "q05" for
// 0.05. Only whole percents have one; other levels give "".
func QuantileKey(alpha float64) string {
	p := alpha * 100
	r := float64(int(p + 0.5))
	if d := p - r; d > 1e-9 || d < -1e-9 || r < 1 || r > 99 {
		return ""
	}
	return "q" + leftPad(strconv.Itoa(int(r)))
}

func leftPad(s string) string {
	if len(s) == 1 {
		return "0" + s
	}
	return s
}

// classNames maps the paper's class names to uaxai's (host/data).
var classNames = map[string]string{
	"flicker": "flicker", "flicker+harm.": "flicker_harmonics", "flicker+sag": "flicker_sag", "flicker+swell": "flicker_swell",
	"harmonics": "harmonics", "imp.trans.": "impulsive_transient", "interruption": "interruption",
	"interruption+harm.": "interruption_harmonics", "notch": "notch", "osc.trans.": "oscillatory_transient",
	"sag": "sag", "sag+harm.": "sag_harmonics", "spike": "spike", "swell": "swell", "swell+harm.": "swell_harmonics",
}

// Class returns uaxai's class name for a class as the paper or uaxai
// writes it ("Imp. trans." and "impulsive_transient" both give
// "impulsive_transient"), or "".
func Class(s string) string {
	if c, ok := classNames[norm(s)]; ok {
		return c
	}
	for _, c := range classNames {
		if c == s {
			return c
		}
	}
	return ""
}
