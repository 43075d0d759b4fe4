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

# headers.txt: the header np.save writes for arrays of every dtype that
# npy.WriteHeader writes and shapes whose headers cross the 64-byte
# boundaries (a line: descr, shape as comma-separated dims, hex of the
# bytes before the data). Arrays too large to build get the header of
# format.write_array_header_1_0, which np.save calls for them; the two are
# checked equal on the arrays that can be built.
import io
with open('headers.txt', 'w') as out:
    for descr in ['<f4', '<i8', '|b1']:
        shapes = [(), (0,), (7,), (2, 3), (100, 3, 640)]
        shapes += [(0,) + (10**k,) * m for m in (1, 2, 3) for k in range(19)] + [(10**k, 3, 0) for k in range(19)]
        for shape in shapes:
            h = io.BytesIO()
            fmt.write_array_header_1_0(h, {'descr': descr, 'fortran_order': False, 'shape': shape})
            h = h.getvalue()
            if max(shape, default=0) <= 10**6 and int(np.prod(shape, dtype=object)) <= 10**6:
                b = io.BytesIO()
                np.save(b, np.zeros(shape, dtype=np.dtype(descr)))
                assert b.getvalue()[:len(h)] == h, (descr, shape)
            out.write('%s %s %s\n' % (descr, ','.join(map(str, shape)), h.hex()))
