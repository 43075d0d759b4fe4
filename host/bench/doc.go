// Package bench measures what an attribution map costs on the paper's
// network: occlusion (window 60, stride 1), occlusion under 20 MC-dropout
// draws, Grad-CAM of conv4 and LIME with 128 samples, each in
// milliseconds a map, on one goroutine. `uaxai bench` prints them beside
// the PyTorch reference (Reference), and `go test -bench . ./host/bench`
// reports the same cases as benchmarks.
//
// The network is nn.PaperArch with dropout on fc2's input, trained for a
// few epochs on a small generated set (so that its outputs, and with them
// LIME's surrogate fits, are those of a network that has learned
// something); the single-draw cases use MC-dropout draw 0, an ordinary
// paper network. Everything is seeded: the same Setup gives the same
// networks and inputs.
//
// uaxai bench and go test -bench Maps ./host/bench: ms a map of every
// operator on the paper's network, beside the PyTorch harness run at its
// best (glibc malloc tuning, 2 threads), with the BLAS it loaded and
// whether oneDNN is there (see Speed of the explainers); archs.go, uaxai
// bench --archs and go test -bench Archs ./host/bench: the golden graph
// networks (FCN, ResNet1D, InceptionTime from recipes/archs with
// testdata/golden/archs weights) on nn.NewGraphModel, a forward batch of
// 64, occlusion maps (window 60, stride 20) and a training epoch (nn.Train
// on the graph) on 1 and --workers goroutines, ms and GFLOP/s (2 x conv
// and linear multiply-adds), beside testdata/peers/archs_bench.py (the
// same nets in torch, same run: forward, occlusion as one batch of
// occluded copies, a training epoch of Adam).
//
// # How the bench measures
//
//   - Bench (host/bench, cmd/uaxai/bench.go): a small trained paper
//     network and its 20 MC-dropout draws, 16 generated waveforms; each
//     case from a new explainer value (no cache across runs); medians of
//     wall time and of the thread's CPU time (which hardly moves with the
//     machine's load); then testdata/peers/torch_ref.py bench in the same
//     invocation when /usr/bin/python3 imports torch, else the README's
//     figures, labelled as not measured. The reference process gets
//     GLIBC_TUNABLES with glibc's malloc thresholds raised (appended to
//     any value set; referenceEnv), so that torch does not return its
//     large temporaries to the OS after every forward, and 2 threads; its
//     first line reports the BLAS library it has mapped (/proc/self/maps,
//     parsed by testdata/peers/blasinfo.py, not torch's BLAS_INFO build
//     string), oneDNN's availability and the tunables, and each op gives
//     its median wall and process CPU time, which the table shows.
package bench
