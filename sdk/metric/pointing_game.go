package metric

// PointingGame is Quantus's PointingGame (Zhang et al. 2018), unweighted:
// 1 if a sample where the map attains its maximum lies in the mask, else
// 0. Undefined for an empty mask.
func PointingGame() Entry {
	return mapEntry(Info{
		ID: "metric.pointing_game", Quantus: "PointingGame", Category: Localisation,
		Needs: Needs{Mask: true}, Higher: true,
		Summary: "1 if the map's maximum lies in the mask",
	}, true, false, nil, fixed(pointingGame))
}

func pointingGame(a []float64, mask []bool) Score {
	l := 0
	top := a[0]
	for j, x := range a {
		top = max(top, x)
		if mask[j] {
			l++
		}
	}
	if l == 0 {
		return undefined("the mask is empty", nil)
	}
	for j, x := range a {
		if x == top && mask[j] {
			return Score{Value: 1}
		}
	}
	return Score{Value: 0}
}
