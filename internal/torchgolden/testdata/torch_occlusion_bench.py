"""Plain torch occlusion on resnet1d's 8 records (the PyTorch side of BenchmarkOcclusionResNet1D): the windows
of one map in forward batches of 128, one thread, ms/map. Run from the repository root with /usr/bin/python3."""
import sys, time, numpy as np, torch
sys.path.insert(0, "sdk/python")
from uaxai_plugin import torchmodel as tm
torch.set_num_threads(1)
G = "testdata/golden/archs/"
m = tm.load_module(G + "archs.py:ResNet1D", {"cin": 1})
m.load_state_dict(tm.load_state_dict(G + "resnet1d/model.safetensors"))
m.eval()
x = torch.from_numpy(np.loadtxt(G + "resnet1d/waveforms.csv", delimiter=",", dtype=np.float32)).view(8, 1, 640)
y = np.loadtxt(G + "resnet1d/targets.csv", dtype=np.int64)
for stride in (20, 1):
    starts = list(range(0, 581, stride))
    t0 = time.perf_counter()
    reps = 3 if stride == 1 else 10
    for _ in range(reps):
        for b in range(8):
            with torch.no_grad():
                p0 = m(x[b:b + 1])[0, y[b]]
                for lo in range(0, len(starts), 128):
                    ss = starts[lo:lo + 128]
                    xo = x[b].repeat(len(ss), 1, 1)
                    for j, s in enumerate(ss):
                        xo[j, :, s:s + 60] = 0
                    d = p0 - m(xo)[:, y[b]]
    print("stride %d: %.1f ms/map" % (stride, (time.perf_counter() - t0) * 1000 / (reps * 8)))
