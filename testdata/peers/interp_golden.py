#!/usr/bin/env python3
"""Writes the Grad-CAM maps of testdata/golden/archs resampled to the
input's length as PyTorch resamples them, for explainer.gradcam's align =
"linear" and "nearest" (Captum's LayerAttribution.interpolate is
torch.nn.functional.interpolate):

    /usr/bin/python3 testdata/peers/interp_golden.py testdata/golden/archs

For each network whose Grad-CAM layer is shorter than the input
(manifest.json's gradcam_length < length), it reads gradcam_raw.csv (rows
of L values) and writes

    gradcam_linear.csv   F.interpolate(cam[:, None, :], size=length, mode="linear", align_corners=False)
    gradcam_nearest.csv  F.interpolate(cam[:, None, :], size=length, mode="nearest")

float32, %.9g, one row a map.
"""

import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def main(root):
    with open(os.path.join(root, "manifest.json")) as f:
        man = json.load(f)
    for name, a in sorted(man["archs"].items()):
        if a["gradcam_length"] >= a["length"]:
            continue
        cam = np.loadtxt(os.path.join(root, name, "gradcam_raw.csv"), delimiter=",", dtype=np.float32, ndmin=2)
        x = torch.from_numpy(cam)[:, None, :]
        for mode, kw in (("linear", {"align_corners": False}), ("nearest", {})):
            y = F.interpolate(x, size=a["length"], mode=mode, **kw)[:, 0, :].numpy()
            np.savetxt(os.path.join(root, name, "gradcam_%s.csv" % mode), y, fmt="%.9g", delimiter=",")
            print(name, mode, y.shape)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/golden/archs")
