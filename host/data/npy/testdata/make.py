# Writes the .npy files of this folder with NumPy (Debian's python3-numpy):
# the reference the reader is tested against. Run: python3 make.py
import numpy as np
from numpy.lib import format as fmt

np.save('f32.npy', np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
np.save('f64_3d.npy', (np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 5) * 0.125)
np.save('i64.npy', np.array([3, 0, 15, 7], dtype=np.int64))
np.save('u8.npy', np.array([1, 2, 255], dtype=np.uint8))
np.save('i32be.npy', np.array([-2, 1, 70000], dtype='>i4'))
np.save('names.npy', np.array(['sag', 'swell', 'normal'], dtype='<U6'))
np.save('fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save('scalar.npy', np.float32(2.5))
np.save('empty.npy', np.zeros((0, 3), dtype=np.float32))
np.save('bool.npy', np.array([True, False]))
with open('v2.npy', 'wb') as f:
    fmt.write_array(f, np.array([1.5, -2.0], dtype=np.float32), version=(2, 0))
