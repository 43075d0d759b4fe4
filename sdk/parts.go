package sdk

import "github.com/uaxai/uaxai/sdk/internal/check"

// Parted is a posterior whose fit is made of parts that can be fitted on
// their own, in separate processes or on separate machines (a deep
// ensemble's members). Parts returns their number K for a recipe table
// (K <= 1: the fit is not parted). The artifacts of parts 0..K-1 are
// disjoint in their tensors, agree on every Meta key they share, and
// their union is the artifact of the whole fit, bit for bit.
//
// The host asks Parts after Check, and, for K > 1, fits each part with
// FitRequest.Part = k and FitRequest.Parts = K, and joins the artifacts.
// A part's training must not depend on FitRequest.Workers, which the host
// may choose differently for a part than for a whole fit. Parts does no
// work beyond reading cfg; cfg has passed Check.
type Parted interface {
	Parts(cfg Config) (int, error)
}

// unparted refuses a request for a part (Parts > 0) of a posterior that
// is not Parted.
func unparted(p Posterior, req FitRequest) error {
	if _, ok := p.(Parted); ok {
		return nil
	}
	return check.Unparted(int64(req.Part), int64(req.Parts))
}
