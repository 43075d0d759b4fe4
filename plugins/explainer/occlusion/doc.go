// Package occlusion is the attribution operator "explainer.occlusion",
// Captum's Occlusion on the class probability: windows of `window` samples
// starting at s = 0, stride, 2 stride, ... (s + window <= N) are replaced
// by a baseline, and
//
//	map[t] = (1 / |W_t|) sum_{s in W_t} (p_c(x) - p_c(x with window s replaced by the baseline))
//
// where W_t is the set of windows covering t. A position no window covers
// (when the stride leaves a tail) gets 0. The map stays signed.
//
// With C > 1 input channels (the map is C x T, channel-major, as the input)
// the key `channels` chooses what a window occludes:
//
//   - "each" (the default): one channel at a time, as Captum's Occlusion
//     with sliding_window_shapes = (1, window), strides = (1, stride):
//
//     map[c*T+t] = (1 / |W_t|) sum_{s in W_t} (p_y(x) - p_y(x with samples s..s+window-1 of channel c alone replaced by the baseline))
//
//     so a channel's row says what that channel's samples contribute. It
//     costs about C one-channel occlusions: window s of channel c is window
//     s of every channel occluded by the signal x with row c replaced by
//     the baseline (nn.ChannelBaseline), which keeps the incremental paths.
//
//   - "all": a window occludes every channel at once (Captum's
//     sliding_window_shapes = (C, window)), and every channel's row is the
//     same time map: map[c*T+t] = map_all[t] for every c.
//
// With C = 1 both are the same computation (and the same bytes).
//
// The key `baseline` chooses what a window is replaced by, per channel c of
// the record x (T samples a channel):
//
//   - a number b (default 0, the paper's): every occluded sample is b.
//   - "mean": the record's own mean mu_c = (1/T) sum_t x_c[t].
//   - "noise": z_c[t] = mu_c + sigma_c e_c[t], with sigma_c^2 = (1/T)
//     sum_t (x_c[t] - mu_c)^2 the record's own variance and e standard
//     normal. e is drawn once per record, from a stream keyed by the key
//     `seed` (default 0) and the FNV-1a hash of the record's float32 bits
//     (sdk/rng), so it is the same noise for the same record in any batch,
//     on any worker and under every draw of a posterior (common random
//     numbers: the member maps of a record differ only through the model),
//     and another seed gives other noise. Window s takes z_c[s..s+w-1], so
//     a sample is replaced by the same value in every window covering it.
//   - "fundamental": the record's least-squares fit z_c[t] = m_c + a_c
//     sin(2 pi t/P) + b_c cos(2 pi t/P), P the key `period` in samples a
//     cycle (default 64: 50 Hz at 3.2 kHz), so the window shows what the
//     waveform would be with only its offset and fundamental there: a pure
//     sine record of period P is its own baseline and gets a zero map.
//
// The mean, noise and fundamental baselines depend only on the record (and
// seed), never on the model, so the trunk cache shares them between the
// draws of MC dropout as it shares a constant baseline.
package occlusion
