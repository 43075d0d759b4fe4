package record

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// WAV format tags.
const (
	wavePCM        = 1
	waveFloat      = 3
	waveExtensible = 0xFFFE
)

// ReadWAV reads one channel of a RIFF/WAVE file: PCM 8 (unsigned),
// 16, 24 or 32-bit integers, IEEE float 32 or 64-bit, with the
// WAVE_FORMAT_EXTENSIBLE header too. Integers of b bits are scaled to
// [-1, 1) by x / 2^(b-1) (8-bit: (x-128)/128); every value is then
// multiplied by opt.FullScale (when > 0). Errors name the byte offset.
func ReadWAV(path string, b []byte, opt Options) (*Recording, error) {
	le := binary.LittleEndian
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, offsetErr(path, 0, "not a WAV file, want \"RIFF\" size \"WAVE\"")
	}
	rec := &Recording{Path: path}
	var (
		haveFmt          bool
		tag, chans, bits int
		rate             uint32
		align            int
		data             []byte
		dataOff          int64
		haveData         bool
	)
	pos := 12
	for pos+8 <= len(b) {
		id := string(b[pos : pos+4])
		size := int64(le.Uint32(b[pos+4:]))
		body := int64(pos + 8)
		if body+size > int64(len(b)) {
			if id != "data" {
				return nil, offsetErr(path, int64(pos), "chunk %q of %d bytes, but only %d bytes follow", id, size, int64(len(b))-body)
			}
			rec.warnf("%s: byte offset %d: data chunk says %d bytes, the file holds %d; reading those", path, pos, size, int64(len(b))-body)
			size = int64(len(b)) - body
		}
		chunk := b[body : body+size]
		switch id {
		case "fmt ":
			if size < 16 {
				return nil, offsetErr(path, int64(pos), "fmt chunk of %d bytes, want at least 16", size)
			}
			tag = int(le.Uint16(chunk))
			chans = int(le.Uint16(chunk[2:]))
			rate = le.Uint32(chunk[4:])
			align = int(le.Uint16(chunk[12:]))
			bits = int(le.Uint16(chunk[14:]))
			if tag == waveExtensible {
				if size < 40 {
					return nil, offsetErr(path, int64(pos), "WAVE_FORMAT_EXTENSIBLE fmt chunk of %d bytes, want 40", size)
				}
				if vb := int(le.Uint16(chunk[18:])); vb != 0 && vb != bits {
					rec.warnf("%s: %d valid bits in %d-bit containers; the container is read", path, vb, bits)
				}
				tag = int(le.Uint16(chunk[24:])) // the sub-format GUID's first two bytes
			}
			haveFmt = true
		case "data":
			data, dataOff, haveData = chunk, body, true
		}
		pos = int(body + size + size%2) // chunks are padded to even sizes
	}
	if !haveFmt {
		return nil, offsetErr(path, 12, "no fmt chunk")
	}
	if !haveData {
		return nil, offsetErr(path, int64(len(b)), "no data chunk")
	}
	var kind string
	switch {
	case tag == wavePCM && (bits == 8 || bits == 16 || bits == 24 || bits == 32):
		kind = fmt.Sprintf("PCM %d-bit", bits)
	case tag == waveFloat && (bits == 32 || bits == 64):
		kind = fmt.Sprintf("float %d-bit", bits)
	default:
		return nil, offsetErr(path, 20, "format tag %d with %d bits, want PCM (1) of 8, 16, 24 or 32 bits or IEEE float (3) of 32 or 64 bits", tag, bits)
	}
	if chans < 1 || rate == 0 || align != chans*bits/8 {
		return nil, offsetErr(path, 22, "%d channels, %d Hz, block align %d: want >= 1 channel, a rate > 0 and block align = channels*bits/8 = %d", chans, rate, align, chans*bits/8)
	}
	ch := 0
	if opt.Channel != "" {
		k, err := strconv.Atoi(opt.Channel)
		if err != nil || k < 1 || k > chans {
			return nil, fmt.Errorf("record: %s: no channel %q; a WAV channel is a number 1..%d", path, opt.Channel, chans)
		}
		ch = k - 1
	}
	n := len(data) / align
	if rem := len(data) % align; rem != 0 {
		rec.warnf("%s: byte offset %d: %d bytes after the last whole frame are ignored", path, dataOff+int64(n*align), rem)
	}
	if n == 0 {
		return nil, offsetErr(path, dataOff, "no samples in the data chunk")
	}
	fs := opt.FullScale
	if fs == 0 {
		fs = 1
	}
	rec.Samples = make([]float64, n)
	w := bits / 8
	for i := 0; i < n; i++ {
		s := data[i*align+ch*w:]
		var v float64
		switch {
		case tag == wavePCM && bits == 8:
			v = (float64(s[0]) - 128) / 128
		case tag == wavePCM && bits == 16:
			v = float64(int16(le.Uint16(s))) / (1 << 15)
		case tag == wavePCM && bits == 24:
			x := int32(uint32(s[0])<<8|uint32(s[1])<<16|uint32(s[2])<<24) >> 8
			v = float64(x) / (1 << 23)
		case tag == wavePCM && bits == 32:
			v = float64(int32(le.Uint32(s))) / (1 << 31)
		case bits == 32:
			v = float64(math.Float32frombits(le.Uint32(s)))
		default:
			v = math.Float64frombits(le.Uint64(s))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, offsetErr(path, dataOff+int64(i*align+ch*w), "sample %d of channel %d is %v, want a finite number", i, ch+1, v)
		}
		rec.Samples[i] = v * fs
	}
	rec.Format = "WAV " + kind
	rec.Channel, rec.Index = strconv.Itoa(ch+1), ch+1
	rec.Segments = []Segment{{Start: 0, End: n, Rate: float64(rate)}}
	rec.finish()
	return rec, nil
}

// EncodeWAV returns a WAV file of one channel: PCM 16-bit (bits 16) of
// round(x / fullScale * 32768) clipped to the int16 range, or IEEE float
// 32-bit (bits 32) of x / fullScale.
func EncodeWAV(x []float64, rate int, bits int, fullScale float64) ([]byte, error) {
	if rate <= 0 || !(fullScale > 0) || (bits != 16 && bits != 32) {
		return nil, fmt.Errorf("record: WAV write: rate %d, bits %d, full scale %g: want rate > 0, bits 16 or 32, full scale > 0", rate, bits, fullScale)
	}
	le := binary.LittleEndian
	w := bits / 8
	tag := uint16(wavePCM)
	if bits == 32 {
		tag = waveFloat
	}
	b := make([]byte, 0, 44+w*len(x))
	b = append(b, "RIFF"...)
	b = le.AppendUint32(b, uint32(36+w*len(x)))
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, tag)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint32(b, uint32(rate))
	b = le.AppendUint32(b, uint32(rate*w))
	b = le.AppendUint16(b, uint16(w))
	b = le.AppendUint16(b, uint16(bits))
	b = append(b, "data"...)
	b = le.AppendUint32(b, uint32(w*len(x)))
	for _, v := range x {
		if math.IsNaN(v) {
			return nil, fmt.Errorf("record: WAV write: NaN sample (WAV has no missing-value marker)")
		}
		if bits == 16 {
			q := math.Round(v / fullScale * 32768)
			b = le.AppendUint16(b, uint16(int16(math.Max(-32768, math.Min(32767, q)))))
		} else {
			b = le.AppendUint32(b, math.Float32bits(float32(v/fullScale)))
		}
	}
	return b, nil
}
