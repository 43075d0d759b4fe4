package sdk

// RecordingDefaulter is an optional interface of an explainer: the keys
// its recipe table takes by default when the recipe explains a real
// recording ([recording]), given the table as the recipe wrote it and
// period, the samples a cycle of the system frequency in a window (0 when
// unknown). It returns only keys the table does not set (nil: none). The
// host writes them into the table at decode time, so that the canonical
// recipe (a run's recipe.toml) shows them, and notes that they came from
// [recording]. It is read from a built-in's value in process (host/builtin);
// the plugin protocol does not carry it.
type RecordingDefaulter interface {
	RecordingDefaults(cfg Config, period float64) Config
}
