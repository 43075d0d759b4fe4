# Writes the dataset directories of this folder with NumPy (Debian's
# python3-numpy): the reference ReadDir is tested against
# (files_test.go, TestReadsNumPysDirs). Run: /usr/bin/python3 make.py
#
# Every value is a closed form of its indices, which the Go test
# recomputes:
#   waveform[i, c, t]    = (i - 1.5) * 0.5 + c * 0.25 - t / 8
#   disturbance[i, c, t] = waveform[i, c, t] / 4
#   mask[i, t]           = (i + t) % 3 == 0   (broadcast over channels)
#   event[i, c, t]       = (i + c + t) % 2 == 1
import json
import os
import struct

import numpy as np

N, C, T = 4, 3, 5
i, c, t = np.meshgrid(np.arange(N), np.arange(C), np.arange(T), indexing='ij')
wave = (i - 1.5) * 0.5 + c * 0.25 - t / 8
names = np.array(['sag', 'swell', 'normal', 'sag'])

# npy3: three channels, float64 waveforms, labels as class names in the
# order of classes.txt, masks (N, T) uint8, float32 disturbance, bool event.
os.makedirs('npy3', exist_ok=True)
np.save('npy3/waveforms.npy', wave.astype(np.float64))
np.save('npy3/labels.npy', names)
with open('npy3/classes.txt', 'w') as f:
    f.write('normal\nsag\nswell\ndip\n')
np.save('npy3/masks.npy', ((i[:, 0, :] + t[:, 0, :]) % 3 == 0).astype(np.uint8))
np.save('npy3/disturbance.npy', (wave / 4).astype(np.float32))
np.save('npy3/event.npy', (i + c + t) % 2 == 1)

# npy1: one channel as (N, T) float32, int16 labels, no classes.txt (so
# the classes are class0..class{max}).
os.makedirs('npy1', exist_ok=True)
np.save('npy1/waveforms.npy', wave[:, 0, :].astype(np.float32))
np.save('npy1/labels.npy', np.array([2, 0, 5, 2], dtype=np.int16))

# names: class names without classes.txt: the sorted distinct names.
os.makedirs('names', exist_ok=True)
np.save('names/waveforms.npy', wave.astype(np.float32))
np.save('names/labels.npy', names)

# st: safetensors, written by hand (the format is an 8-byte header length,
# a JSON header, the raw little-endian data): float64 waveforms, int32
# labels, BOOL masks of (N, C, T), classes in the metadata.
os.makedirs('st', exist_ok=True)
tensors = [
    ('waveforms', 'F64', wave.astype('<f8')),
    ('labels', 'I32', np.array([1, 0, 2, 1], dtype='<i4')),
    ('masks', 'BOOL', np.broadcast_to(((i[:, 0, :] + t[:, 0, :]) % 3 == 0)[:, None, :], (N, C, T)).astype(np.bool_)),
]
header, data, off = {'__metadata__': {'classes': 'normal,sag,swell'}}, b'', 0
for name, dtype, a in tensors:
    b = np.ascontiguousarray(a).tobytes()
    header[name] = {'dtype': dtype, 'shape': list(a.shape), 'data_offsets': [off, off + len(b)]}
    data, off = data + b, off + len(b)
h = json.dumps(header).encode()
h += b' ' * (-len(h) % 8)
with open('st/data.safetensors', 'wb') as f:
    f.write(struct.pack('<Q', len(h)) + h + data)
