package recipe

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/internal/checked"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// Bounds on the recipe text, checked before the TOML library reads it
// (checkText). A real recipe is a few KiB, nests four or five levels
// ([[model.layers]] and a key; a plugin's inline table) and has keys of a
// few dozen bytes; the bounds are far above that and far below what costs
// memory. BurntSushi/toml keeps a table of every key by its whole path, so
// its memory grows as the product of the key path's length and the number
// of keys, and with the square of the nesting of inline tables and dotted
// keys (a 20 KB recipe of inline tables nested 5,000 deep took 1.1 GB).
const (
	// MaxRecipeSize is the largest recipe file, in bytes.
	MaxRecipeSize = 1 << 20
	// MaxDepth is the deepest nesting: the parts of a table header
	// ([a.b.c] is 3), of a dotted key, and each array and inline table a
	// value opens, added up along the path from the top level.
	MaxDepth = 32
	// MaxKeyPath is the longest key path in bytes: the names of the
	// tables, keys and inline-table keys along a path, added up.
	MaxKeyPath = 1024
)

// checkText refuses a recipe text beyond MaxRecipeSize, MaxDepth or
// MaxKeyPath with an error naming the file and the line. It reads the
// text as TOML only as far as it must (strings, comments, keys, brackets)
// and never fails on a syntax error: that is the TOML library's to report.
func checkText(name string, src []byte) error {
	if err := checkSize(name, int64(len(src))); err != nil {
		return err
	}
	s := &nestScanner{cursor: cursor{src: string(src), line: 1}}
	if err := s.run(); err != nil {
		return fmt.Errorf("recipe %s: line %d: %w", name, s.line, err)
	}
	return nil
}

func checkSize(name string, size int64) error {
	if size > MaxRecipeSize {
		return fmt.Errorf("recipe %s: the file is %d bytes, above the bound of %d (1 MiB); a recipe is a few KiB: keep long data in files that a key names", name, size, MaxRecipeSize)
	}
	return nil
}

// nestScanner follows the nesting of a TOML text: the table of the last
// header, and, inside a value, a stack of the arrays and inline tables
// open.
type nestScanner struct {
	cursor
	// the current table's depth and key bytes
	tableDepth, tableBytes int
	stack                  []nestFrame
}

// nestFrame is an open array or inline table.
type nestFrame struct {
	kind                 byte // '[' or '{'
	baseDepth, baseBytes int  // of the array's elements, or of the inline table itself
	depth, bytes         int  // of the values in it: the elements, or the inline table's current key
}

func (s *nestScanner) skipBlanks() {
	for !s.eof() && (s.peek() == ' ' || s.peek() == '\t' || s.peek() == '\r') {
		s.pos++
	}
}

func (s *nestScanner) skipLine() {
	for !s.eof() && s.peek() != '\n' {
		s.pos++
	}
}

func depthErr(depth int) error {
	return fmt.Errorf("nesting %d levels deep, above the bound of %d (tables, dotted keys, arrays and inline tables added up); a recipe nests a few levels: flatten the table or the value", depth, MaxDepth)
}

func keyErr(bytes int) error {
	return fmt.Errorf("a key path of %d bytes (the names of its tables and keys added up), above the bound of %d: shorten the names", bytes, MaxKeyPath)
}

func (s *nestScanner) check(depth, bytes int) error {
	if depth > MaxDepth {
		return depthErr(depth)
	}
	if bytes > MaxKeyPath {
		return keyErr(bytes)
	}
	return nil
}

// key reads a dotted key and returns its parts and bytes.
func (s *nestScanner) key() (parts, bytes int) {
	for {
		s.skipBlanks()
		start := s.pos
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			s.str()
		case isBare(c):
			for !s.eof() && isBare(s.peek()) {
				s.pos++
			}
		default:
			return parts, bytes
		}
		parts++
		bytes += s.pos - start
		s.skipBlanks()
		if s.peek() != '.' {
			return parts, bytes
		}
		s.pos++
	}
}

// str skips a string of any of the four kinds, whose opening quote is next.
func (s *nestScanner) str() {
	q := s.src[s.pos]
	if s.pos+2 < len(s.src) && s.src[s.pos+1] == q && s.src[s.pos+2] == q {
		s.pos += 3
		for !s.eof() {
			c := s.next()
			if c == '\\' && q == '"' && !s.eof() {
				s.next()
			} else if c == q && s.pos+1 < len(s.src) && s.src[s.pos] == q && s.src[s.pos+1] == q {
				s.pos += 2
				for s.peek() == q { // up to two quotes may end the content
					s.pos++
				}
				return
			}
		}
		return
	}
	s.pos++
	for !s.eof() {
		switch c := s.peek(); {
		case c == '\n':
			return // an unterminated string: the library reports it
		case c == '\\' && q == '"':
			s.pos++
			if s.peek() != '\n' {
				s.pos++
			}
		default:
			s.pos++
			if c == q {
				return
			}
		}
	}
}

func (s *nestScanner) run() error {
	for !s.eof() {
		s.skipBlanks()
		switch c := s.peek(); {
		case s.eof():
			return nil
		case c == '\n':
			s.next()
		case c == '#':
			s.skipLine()
		case c == '[':
			s.pos++
			if s.peek() == '[' {
				s.pos++
			}
			parts, bytes := s.key()
			if err := s.check(parts, bytes); err != nil {
				return err
			}
			s.tableDepth, s.tableBytes = parts, bytes
			s.skipLine()
		default:
			parts, bytes := s.key()
			depth, bytes := s.tableDepth+parts, s.tableBytes+bytes
			if err := s.check(depth, bytes); err != nil {
				return err
			}
			if parts == 0 || s.peek() != '=' {
				s.skipLine()
				continue
			}
			s.pos++
			if err := s.value(depth, bytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// value scans the value of a key at the given depth and key bytes, to the
// end of the line where its last array or inline table closes.
func (s *nestScanner) value(depth, bytes int) error {
	s.stack = s.stack[:0]
	for !s.eof() {
		c := s.peek()
		switch {
		case c == '"' || c == '\'':
			s.str()
			continue
		case c == '#':
			s.skipLine()
			continue
		case c == '\n':
			if len(s.stack) == 0 {
				return nil
			}
		case c == '[' || c == '{':
			d, b := depth, bytes
			if n := len(s.stack); n > 0 {
				d, b = s.stack[n-1].depth, s.stack[n-1].bytes
			}
			if c == '[' {
				d++
			}
			if err := s.check(d, b); err != nil {
				return err
			}
			s.stack = append(s.stack, nestFrame{kind: c, baseDepth: d, baseBytes: b, depth: d, bytes: b})
			s.pos++
			if c == '{' {
				if err := s.inlineKey(); err != nil {
					return err
				}
			}
			continue
		case c == ']' || c == '}':
			if n := len(s.stack); n > 0 {
				s.stack = s.stack[:n-1]
			}
		case c == ',':
			if n := len(s.stack); n > 0 && s.stack[n-1].kind == '{' {
				s.pos++
				if err := s.inlineKey(); err != nil {
					return err
				}
				continue
			}
		}
		s.next()
	}
	return nil
}

// inlineKey reads the key of an inline table's next entry, if there is
// one, and gives its depth and bytes to the values under it.
func (s *nestScanner) inlineKey() error {
	for !s.eof() && strings.IndexByte(" \t\r\n", s.peek()) >= 0 {
		s.next()
	}
	f := &s.stack[len(s.stack)-1]
	parts, bytes := s.key()
	f.depth, f.bytes = f.baseDepth+parts, f.baseBytes+bytes
	return s.check(f.depth, f.bytes)
}

// Bounds on the counts that size an allocation, checked while decoding;
// REFERENCE.md ("Bounds") gives the reasoning beside each. Every bound is
// far above what a study of the case (and the paper) uses, and keeps
// what one count allocates below a few GiB.
const (
	// MaxDraws bounds draws (S): a record's S maps are held together by
	// each summary (and by `uaxai recipe check`'s trial of it).
	MaxDraws = 10000
	// MaxDrawValues bounds draws times the network's input size
	// (in_channels * in_len): the values of one record's S maps, 512 MiB
	// as float64.
	MaxDrawValues = 1 << 26
	// MaxPluginTables bounds the [[posterior]], [[explainer]] and
	// [[summary]] tables, each: every posterior is fitted, every pair
	// explained.
	MaxPluginTables = 256
	// MaxWorkers bounds workers (goroutines, each with its buffers).
	MaxWorkers = 4096
	// MaxPerClass bounds train_per_class and test_per_class.
	MaxPerClass = 100000
	// MaxTestSplits bounds test_splits and the test directories.
	MaxTestSplits = 1000
	// MaxWaveLen bounds the waveform length fs/f0*cycles and in_len.
	MaxWaveLen = 1 << 16
	// MaxDataSamples bounds the samples of the generated training pool,
	// and of the test splits together: 8 GiB as float64.
	MaxDataSamples = 1 << 30
	// MaxInChannels bounds in_channels.
	MaxInChannels = 1024
	// MaxLayers bounds [[model.layers]].
	MaxLayers = 1024
	// MaxLayerOut bounds a layer's out (channels or units).
	MaxLayerOut = 1 << 16
	// MaxParams bounds the network's parameters (256 MiB as float32;
	// the paper's network has about 0.1 M). It is graph.MaxParams, which
	// graph.Compile checks before it allocates a graph's parameters, so
	// that no graph beyond it is allocated before this check refuses it.
	MaxParams = graph.MaxParams
	// MaxNodes bounds a graph's nodes: [[model.nodes]], and the node
	// tables of a [model] graph file (graph.MaxNodes, counted before the
	// file is decoded).
	MaxNodes = graph.MaxNodes
	// MaxBatch bounds [train] batch.
	MaxBatch = 1 << 14
	// MaxBatchValues bounds batch times the activations of one sample
	// (input and every layer's output): a training step's values, 2 GiB
	// as float64.
	MaxBatchValues = 1 << 28
	// MaxPartitions bounds [calibration] partitions.
	MaxPartitions = 100000
	// MaxShards bounds [slurm] shards (and --shards): array tasks, each
	// with its list of units.
	MaxShards = 100000
	// MaxList bounds the lists: [calibration] levels, [agreement] etas and
	// deltas (their grid at most MaxList^2 cells), [sensitivity]
	// distortions, [figures] qualitative, plugin_dirs.
	MaxList = 1000
)

// above reports n above bound at path, in the form every bound's error has.
func (d *decoder) above(path []string, n, bound int64, why string) error {
	return d.keyErr(path, "%d is above the bound %d; %s", n, bound, why)
}

// checkCount refuses n > bound at path.
func (d *decoder) checkCount(path []string, n, bound int, why string) error {
	if n > bound {
		return d.above(path, int64(n), int64(bound), why)
	}
	return nil
}

// checkList refuses a list of more than MaxList elements at path, at the
// first element beyond the bound.
func (d *decoder) checkList(path []string, n int, what string) error {
	if n > MaxList {
		return d.errAt(sub(path, strconv.Itoa(MaxList)), "%s: %d elements are above the bound %d (%s)", keyName(path), n, MaxList, what)
	}
	return nil
}

// SizeBounds are the bounds on a network and its input that a recipe
// has fixed (DefaultSizeBounds: MaxWaveLen, MaxParams, MaxBatchValues) and
// that `uaxai predict` and `explain` take from --max-in-len, --max-params
// and --max-batch-values, whose defaults they are.
type SizeBounds struct {
	InLen       int // samples of a waveform, a channel's (in_len)
	Params      int // the network's parameters
	BatchValues int // a batch times a sample's values (NetSize.Values)
}

// DefaultSizeBounds are a recipe's bounds.
func DefaultSizeBounds() SizeBounds {
	return SizeBounds{InLen: MaxWaveLen, Params: MaxParams, BatchValues: MaxBatchValues}
}

// NetSize is what the bounds measure of a network.
type NetSize struct {
	Params int // its parameters
	// Values is a sample's values: the input and every layer's (a
	// graph's: every node's) output, what a batch's workspace holds of
	// each of its samples.
	Values int
}

// ArchSize measures a network: its graph compiled (GraphSize). An error
// is the architecture's own (Compile bounds the parameters by
// graph.MaxParams and a sample's values by graph.MaxValues before it
// allocates).
func ArchSize(a nn.Arch) (NetSize, error) {
	net, err := a.GraphNet()
	if err != nil {
		return NetSize{}, err
	}
	return GraphSize(net)
}

// GraphSize measures a compiled graph network: its parameters, and the
// input's and every node's output values of a sample.
//
// Compile has counted both with overflow checks and bounded them
// (graph.MaxParams, graph.MaxValues), so they are exact here.
func GraphSize(net *graph.Net) (NetSize, error) {
	return NetSize{Params: net.NumParams(), Values: net.Values()}, nil
}

// addOK is a+b and ok, false once a sum overflows or a term is negative
// (a size that overflowed before it reached here).
func addOK(a, b int, ok bool) (int, bool) {
	s, fits := checked.Add(a, b)
	if !ok || b < 0 || !fits {
		return 0, false
	}
	return s, true
}

// BatchValues is batch times a sample's values, and false when the
// product is above math.MaxInt.
func (s NetSize) BatchValues(batch int) (int, bool) {
	if batch > 0 && s.Values > math.MaxInt/batch {
		return 0, false
	}
	return s.Values * batch, true
}

// checkArchBounds bounds the network's size: its parameters, and a
// training batch's activations. Validate has compiled the architecture
// and the per-key bounds keep every product below 2^63.
func (d *decoder) checkArchBounds(r *Recipe, a nn.Arch) error {
	size, err := ArchSize(a)
	if err != nil {
		return d.errAt([]string{"model", r.Model.graphKey()}, "[model]: %v", err)
	}
	if size.Params > MaxParams {
		return d.keyErr([]string{"model", r.Model.graphKey()}, "the network has %d parameters, above the bound %d (%d MiB as float32)", size.Params, MaxParams, MaxParams*4>>20)
	}
	what := "a sample's values at every node are"
	if v, ok := size.BatchValues(r.Train.Batch); !ok || v > MaxBatchValues {
		return d.above([]string{"train", "batch"}, int64(r.Train.Batch), int64(MaxBatchValues/size.Values),
			fmt.Sprintf("%s %d values, and batch times them must be at most %d (%d GiB as float64)", what, size.Values, MaxBatchValues, MaxBatchValues*8>>30))
	}
	return nil
}
