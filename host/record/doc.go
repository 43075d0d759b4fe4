// Package record reads real power-system recordings (COMTRADE, WAV, CSV)
// and turns one channel, or several, into the 640-sample windows the case
// study's network takes: `uaxai data import`.
//
// # Reading (Read, ReadCOMTRADE, ReadCFF, ReadWAV, ReadCSV)
//
// COMTRADE, IEEE C37.111-1991, -1999 and -2013 (IEC 60255-24):
//
//   - a .cfg with its .dat beside it (and a .inf, read for a nominal
//     value), or a 2013 single-file .cff with the sections
//     "--- file type: CFG ---", "INF", "HDR" and "DAT ASCII[: n]" /
//     "DAT BINARY|BINARY32|FLOAT32: n" (n: the byte count of the data).
//   - cfg: station_name,rec_dev_id[,rev_year] (no year: 1991);
//     TT,##A,##D; analog lines An,ch_id,ph,ccbm,uu,a,b,skew,min,max and,
//     from 1999, primary,secondary,PS; digital lines Dn,ch_id,ph,ccbm,y
//     (1991: Dn,ch_id,y); lf; nrates and max(nrates, 1) lines samp,endsamp;
//     the start and trigger dates dd/mm/yyyy,hh:mm:ss.ssssss (1991:
//     mm/dd/yy); ft; timemult (1999, 2013); time_code,local_code and
//     tmq_code,leapsec (2013).
//   - data: ASCII lines n,timestamp,A1..Ak,D1..Dm; binary samples of a
//     uint32 sample number, a uint32 timestamp, the analog values (int16
//     BINARY, int32 BINARY32, float32 FLOAT32) and the digital channels
//     packed in uint16 words (16 a word, channel 1 in bit 0), all little
//     endian.
//   - the value of a sample is a*x + b in the unit uu (for FLOAT32 too);
//     with Options.Primary a channel with PS = "S" is multiplied by
//     primary/secondary. Skew is not applied.
//   - times: with nrates >= 1, segment k holds samples endsamp_{k-1}+1 ..
//     endsamp_k at samp_k Hz; with nrates = 0 (or one rate of 0) the times
//     are timestamp * timemult µs, which must be evenly spaced (each step
//     within max(timemult µs, 1 %) of the first) and give one segment at
//     (n-1) / (t_last - t_first).
//
// Missing values become NaN samples listed in Recording.Gaps (as runs of
// sample indices), never a number. What this package takes as missing:
// 99999 in a 1991 or 1999 ASCII file (their range is -99999..99998); an
// empty field in any ASCII file (the 2013 form); 0x8000 (-32768) in
// BINARY; 0x80000000 in BINARY32; any NaN in FLOAT32 (0xFFFFFFFF is a
// NaN); an infinite FLOAT32 value is an error. A missing timestamp
// (0xFFFFFFFF, or empty in ASCII) matters only with nrates = 0, where it
// is an error. 99999 in a 2013 ASCII file is missing too (its marker is
// the empty field, but devices write 99999 and python-comtrade reads it as
// missing), with a warning naming the channel, the first line and the
// count.
//
// The standard text is ASCII; real files carry Latin-1, GBK or
// Windows-1251 names. Text is decoded to UTF-8: given by
// Options.Encoding, else UTF-8 when valid, else GBK when every non-ASCII
// byte pairs into a GB2312 code (both bytes 0xA1..0xFE) and those bytes
// do not mostly stand inside ASCII words (Latin-1's "Estação"), else
// Windows-1251 when those bytes are Cyrillic letters that make up most of
// the words they stand in, else Latin-1, with a warning naming the guess. CR LF and LF
// line ends, a UTF-8 BOM, and a DOS end-of-file mark (a run of 0x1A
// bytes, on a line of its own or right after the last line) are accepted.
// Taken with a warning: two-digit years (19yy for yy >= 70, else 20yy),
// day and month swapped when the month would exceed 12, a date that
// cannot be read (the time is then unknown), channel numbers out of
// order, a missing timemult (1), a data file with more or fewer samples
// than the last endsamp (the recording is cut to the shorter), and bytes
// after the last whole binary sample. And what devices write beyond the
// standard, as python-comtrade reads it: a revision year other than
// 1991, 1999 and 2013 (a relay's 2001), read by the file's layout (13
// fields in its first analog line: 1999, and 2013 when a time code line
// follows timemult; else 1991); TT other than ##A + ##D (the counts
// ##A and ##D are used); an endsamp not above the previous one (relays
// repeat the last for unused segments: an empty segment, ignored); the
// 1991 forms of analog (10 fields) and digital (3 fields) lines in a
// later cfg. Beyond that, an error names the file
// and the line, or the byte offset of a binary value, and what the
// standard accepts. A file never makes the reader panic (fuzz targets
// FuzzReadCOMTRADE, FuzzReadWAV, FuzzReadCSV).
//
// Options.Channel picks the analog channel by ch_id (exact, then
// ignoring case) or by its number An, written n or An ("2", "A2"); the
// default is the first voltage channel, by unit (V, kV) or else by name
// (V..., U...), else the first (DefaultAnalog), said in a warning. An unknown channel, or a digital one (Dn or a
// digital ch_id: status bits, not a waveform), is an error that lists the
// accepted forms and the file's analog and digital channels.
//
// Several channels: ReadChannels reads each of a list of selectors (the
// same channel twice is an error); PhaseChannels turns phases such as
// A,B,C into the selectors of the cfg's voltage channels (unit V or kV)
// whose ph is that phase, ignoring case, else the same position in
// A,B,C / 1,2,3 / R,S,T / L1,L2,L3, in the order asked whatever the cfg's
// order. A phase with no voltage channel or with two, and a file that is
// not COMTRADE, are errors naming the file and the cfg's voltage channels.
//
// WAV: RIFF/WAVE with PCM 8 (unsigned), 16, 24 or 32-bit integers or
// IEEE float 32 or 64-bit, WAVE_FORMAT_EXTENSIBLE included, any number of
// channels (Options.Channel: 1..). An integer sample x of b bits is
// x / 2^(b-1) (8-bit: (x - 128)/128), in [-1, 1); every sample is then
// multiplied by Options.FullScale when it is set.
//
// CSV: time,value lines (comma, semicolon or tab; an optional header; #
// comments); the first column is the time in seconds, Options.Channel
// picks a value column by header name or number; the rate is (n-1) /
// (t_last - t_first) and a step more than 1 % from the previous mean
// step is an error naming the line. One column: values at Options.Rate
// Hz. An empty value or NaN is missing.
//
// The nominal value (Recording.Nominal, RMS): an INF line "nominal=V" or
// "nominal_voltage=V" (this package's convention, in any section), else
// the channel's primary rating (values in primary units) or secondary
// rating (values in secondary units), when it is above 1. Import checks a
// rating against the signal: a line-to-line rating of a phase-to-neutral
// channel is divided by sqrt(3), and a rating that both the pre-event RMS
// and the median cycle RMS put beyond RatingFactor (field recorders write
// a transformer ratio, 100:1 or 1100:1, where the rating belongs) gives
// way to the pre-event RMS, each with a warning. The stated line
// frequency is compared with EstimateFrequency (rising zero crossings
// with hysteresis, interpolated linearly), and a difference over 2 % is a
// warning.
//
// # Resampling (Resampler, Firwin, Kaiser, BesselI0, Ratio)
//
// Resampler is scipy.signal.resample_poly(x, up, down) with its defaults:
// up/down reduced by their gcd, max_rate = max(up, down), half_len =
// 10*max_rate,
//
//	h    = firwin(2*half_len + 1, 1/max_rate, window=("kaiser", 5.0)) * up
//	y[n] = sum_m x[m] h[n*down - m*up + half_len],  n = 0 .. ceil(N*up/down) - 1,
//
// x zero outside 0..N-1, computed by polyphase (output n uses only the
// taps h[p], h[p+up], ... of its phase p = (n*down + half_len) mod up).
// Against testdata/golden/signal (scipy 1.10.1) the taps agree to 6.9e-16
// and the outputs to 2.3e-15 (4/25) and 9.7e-16 (8/25), relative to the
// largest value.
//
// # Import (Import, WriteDir)
//
// Each rate segment is resampled to ImportOptions.Rate (3200 Hz) by the
// ratio Ratio finds (up, down <= MaxRatio, 1000, within 1e-9) and the
// segments are concatenated. A rate no such ratio reaches but within
// RateTolerance (1 %) and a quarter sample a cycle of N samples a cycle of the
// system frequency (a frequency-tracking recorder's 2401.509521 Hz, a
// rate measured from timestamps) is taken as N * f, with a warning saying
// how far the samples' times move; any other rate is an error. Adjacent
// segments of one rate (as written, or as taken) are resampled as one
// segment, without a border gap (importSegments), unless the file's
// timestamps jump between them: consecutive timestamps more than
// JumpFactor (10) sample periods apart split a rate segment there
// (Segment.Skip, the time skipped; a warning names the samples), the
// border is a gap ("timestamp jump"), a window that straddles it is
// dropped, and the times after it follow the timestamps. The signal is divided by sqrt(2) * Nominal, so that a sine
// of the nominal RMS value has peak 1 (the generator's amplitude), and cut
// into windows k*hop .. k*hop+window-1 (640 and 640 by default).
// The output is sized before it is allocated: a segment whose ratio
// up/down exceeds MaxGrowth (100), a signal of more than MaxOutSamples
// (2^27) samples, or windows holding more than MaxOutSamples samples
// together are errors that say what to change (resample the file
// beforehand, cut it, or a larger hop).
// A missing sample is 0 in the filter's input and every output sample
// whose sum reaches it is a gap (Resampler.Support: |n*down - m*up| <=
// half_len); so are the output samples whose filter reaches across a
// border between rate segments. A window with a gap sample is dropped and
// the reason kept. The two ends of the recording are zero padded, like
// resample_poly, and are not gaps.
//
// ImportChannels does the same to several channels of one recording (one
// time base): each channel is divided by sqrt(2) times its own nominal
// value (ImportOptions.Nominal for all when given, else each channel's
// Recording.Nominal; for three phases the phase-to-neutral value), the
// windows are cut at the same samples of every channel, a window with a
// gap in any channel is dropped for all, and a kept window is C x Length
// values, channel-major (channel c's samples at c*Length ..).
//
// WriteDir writes waveforms.csv (one kept window a line: what uaxai
// explain --input and host/data read), labels.csv when a label is given
// (then the directory is a split of a recipe's [data] source = "files"),
// windows.csv (window,start,source_sample,source_time_s,time) and
// import.json (the provenance: source, channel, segments and ratios,
// nominal, gaps, dropped windows, warnings); with C > 1 channels a line
// is C x Length values channel-major, waveforms.npy holds the windows as
// float32 of shape (N, C, Length), and import.json lists the channels.
// One channel writes no waveforms.npy and no channel list.
//
// # Writing (COMTRADE, EncodeWAV, WriteRawCSV, DemoFiles)
//
// COMTRADE writes cfg/dat pairs and .cff files of every revision and file
// type (stored x = round((v - b)/a), or float32 for FLOAT32; a missing
// value as the markers above), for tests and the shipped demonstration
// recording (testdata/recordings, Synthesize, DemoFiles) and the
// three-phase test recording (ThreePhase, ThreePhaseFiles). WriteRawCSV
// writes a channel as time,value with shortest round-trip formatting.
//
// Real recordings: COMTRADE (1991/1999/2013, cfg+dat and cff), WAV and CSV
// readers, COMTRADE writers, scipy's resample_poly filter, Import
// (resample, per-unit, windows, gaps) and WriteDir for uaxai data import;
// several channels of one file (ReadChannels, PhaseChannels: voltage
// channels by the cfg's ph) imported on one time base by ImportChannels
// into C x T windows, channel-major, a gap in any channel dropping the
// window for all, written as waveforms.csv lines of C*T values and
// waveforms.npy (N, C, T); the demonstration recordings in
// testdata/recordings (one channel; three phases with a sag); what field
// recorders write beyond the standard is read with one warning naming file
// and line (unknown revision years by layout, repeated endsamp, empty
// lines between ASCII samples, digital lines without y, skipped analog
// numbers, Windows-1251 names detected beside GBK and Latin-1), a rating
// the signal contradicts by more than RatingFactor (a transformer ratio
// written as a rating) gives way to the pre-event RMS with a warning, and
// Import takes a frequency-tracking rate (within 1 % and a quarter sample
// of N samples a cycle, RateTolerance) as N*f and resamples adjacent
// segments of one rate as one, without border gaps (field_test.go,
// synthetic files of the deviations of seven public field recordings).
package record
