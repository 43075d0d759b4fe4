// Package graph describes a network as a graph of ops (issue 24): the
// form in which an architecture is written in TOML ([model] nodes, or
// recipes/archs/*.toml), imported from ONNX (sdk/onnx), and computed by
// the op table.
//
// A Spec is the contract between those parts. Its nodes are in
// topological order; a node reads the outputs of earlier nodes (or the
// network's input, Input) by name, so residual additions and
// concatenations are nodes with several inputs. Every value is C x T per
// input, channel-major, as everywhere in uaxai; a linear layer or a
// global pool gives C x 1.
//
// Names are PyTorch module paths. A node's parameters are
// "<name>.<suffix>" (name "block1.conv1", tensor "block1.conv1.weight"),
// so a model's state_dict loads by name. A layer P, as Grad-CAM names it,
// is the output of the last node whose name is P or begins with "P."
// (the output of PyTorch's module P): "block3" is the last node of
// block3. Nodes without parameters (activations, add) still have unique
// names under their module ("block1.relu2").
//
// The ops and their attributes (Node.Attrs; defaults in brackets), with
// the parameters' suffixes and shapes for input channels Cin:
//
//	conv1d      out, kernel, stride [1], dilation [1], groups [1],
//	            padding [[0, 0]]: [left, right] zeros, bias [true]
//	            weight (out, Cin/groups, kernel), bias (out)
//	pad         left, right, value [0.0]: constant padding in time
//	maxpool1d   kernel, stride [kernel], padding [0] (-inf padding)
//	avgpool1d   kernel, stride [kernel], padding [0] (zero padding,
//	            counted: PyTorch's count_include_pad = True)
//	globalavgpool, globalmaxpool   over time: C x T -> C x 1
//	batchnorm1d eps [1e-5] (eval: running statistics)
//	            weight, bias, running_mean, running_var (C)
//	linear      out, bias [true]: on C x 1 (after a global pool or
//	            flatten)   weight (out, C), bias (out)
//	flatten     C x T -> (C*T) x 1
//	relu, gelu (exact, erf), silu, sigmoid, tanh
//	leakyrelu   slope [0.01]
//	softmax     axis [0]: over the channels of each step (0) or the
//	            steps of each channel (1)
//	dropout     p [0.5]: identity in evaluation; MC dropout's masks
//	add         two inputs of one shape
//	concat      two or more inputs of one length, along channels
//
// A Transformer's ops (tokenops.go), on values read as rows (tokens) of
// columns (features): after a transpose of a patch convolution's output,
// PyTorch's (batch, tokens, features) with batch_first.
//
//	transpose   C x T -> T x C
//	reshape     rows, cols: the same values read as rows x cols
//	dense       out, bias [true]: nn.Linear on each row
//	            weight (out, T), bias (out)
//	layernorm   eps [1e-5]: nn.LayerNorm over each row's columns
//	            weight (T), bias (T)
//	attention   heads, dropout [0.0] (on the attention weights, in
//	            training passes): nn.MultiheadAttention as
//	            self-attention of the rows, batch_first, no mask
//	            in_proj_weight (3T, T), in_proj_bias (3T),
//	            out_proj.weight (T, T), out_proj.bias (T)
//	matmul      a (M x K) and b (K x N) -> M x N, per sample
//	sub, mul, div  two inputs, broadcast (each axis equal, or 1)
//	affine      weight [[0, 0]], bias [[0, 0]] (the shapes of broadcast
//	            parameters, [0, 0]: none), scale [1.0], shift [0.0]:
//	            (x weight + bias) scale + shift   weight, bias
//	pow         exponent; sqrt, erf, gelu_tanh (GELU's tanh form)
//	reducemean  axis: the mean of the rows (0: 1 x T) or of each row
//	            (1: C x 1)
//
// None of them is Local but pow, sqrt, erf and gelu_tanh: WindowProbs and
// SpanProbs compute every node after the first of them in full (a
// Transformer's attention reads every token).
//
// The lengths in time (kernel, stride, dilation, padding, left, right) are
// at most MaxExtent, out and groups at most MaxOut; a spec has at most
// MaxNodes nodes, MaxParams parameters and MaxValues values a sample
// (bounds.go), which Compile counts before it allocates.
//
// The network's output is the output node's C x 1 values: class
// probabilities if its op is softmax, else logits (the softmax is
// applied on top).
//
// Issue 24's network as a graph of ops (an nn.Arch with Graph, from a
// recipe's [model] graph/onnx, --model, or posterior.files): Spec (the
// contract with TOML and sdk/onnx), the op table Ops() (per op kind, in
// one place: attributes with defaults and what is accepted, state_dict
// parameters, shape rule, forward, backward, receptive field, pointwise),
// Compile (validation with errors naming the node, flat Theta with PyTorch
// names; bounds.go: every shape expression (spans, padded and output
// lengths, channel sums, sizes, parameter counts) computed with overflow
// checks (internal/checked, also in sdk/nn/ops' shape rules), each length
// attribute at most MaxExtent, out and groups at most MaxOut, and the
// nodes, a node's inputs, the parameters (MaxParams, the recipe's bound)
// and a sample's values (MaxValues, Net.Values) counted before anything
// they size is allocated, for specs from TOML, JSON and ONNX alike; errors
// name the node, the attribute and the bound,
// LoadStateDict/LoadSafetensors, activation buffers planned by liveness),
// Net.Forward (probabilities), Net.Grad (d p_target / d x, d p_target / d
// theta, a layer's activation and gradient for Grad-CAM by module path),
// Net.Run/Net.Backprop (a pass keeping every value, in training mode with
// the ops' TrainForward/TrainBackward/State: batchnorm's batch statistics,
// dropout's masks; the gradient of any loss of the output values: what
// nn.Train drives; an op's Fuses folds the node of that kind that is its
// only reader into its training pass, batchnorm the relu after it
// (planFusion, Call.Fused: one pass over the activations fewer each way,
// the same bits, fuse_test.go), and training batchnorm keeps its mean and
// 1/sqrt(var+eps), recomputing the normalised input in the backward pass;
// a call's samples run in 4 even chunks, in chunks of GradChunk = 8 where
// parameter gradients are summed: the layer-list engine's order, so that
// the paper's network trains to its bytes, sdk/nn/testdata/layerlist),
// Net.FoldEval (the folded
// inference pass of Net.Forward, evalfold.go: a batchnorm (Op.Affine) that
// is the only reader of a conv1d or linear node (Op.Absorb) folded into
// that node's weights and bias, and the ReLU after it into the
// convolution's kernel call (Op.EvalFuses, each sample rectified while in
// cache), planned with buffers of its own; nn.GraphModel's nets are
// folded, since their Theta never changes; Grad, Run, the incremental
// paths and Net.ForwardUnfolded run every node, and nn.PlainProbs (a
// GraphModel's PlainProbs) is what occlusion and the model service's
// Windows take the unperturbed probability from, so that it has the
// incremental paths' bits and a window that changes nothing scores exactly
// 0), Net.LayerSpan (a layer's receptive field in input samples: position
// l reads [l*S + a, l*S + b], composed through every path from the input,
// the hull over an addition's or concatenation's inputs, which must have
// one stride; refused behind global pooling, flatten or linear; Grad-CAM's
// align = "centre" on graph networks), ReadSpecFile (TOML [[nodes]],
// errors with file:line; scanSpec counts a text's node tables, keys and
// array elements and nesting against MaxNodes, MaxSpecItems, MaxSpecDepth
// before the TOML library reads it; FuzzReadSpec fuzzes the reader and
// Compile's sizes); nn.GraphModel is a compiled net as an nn.Model (module
// paths for layers, LayerField from Net.LayerSpan), on which every
// explainer runs; window.go: Net.WindowProbs (occlusion's windows,
// constant or signal baseline) and Net.SpanProbs (LIME's spans, every
// channel or one) recompute per perturbed copy only the steps whose
// receptive field (the op table's Field) reads a changed input step, in
// batches of 64 copies, and return a Path (copies, incremental ones, the
// FLOPs done against full passes; see Speed of the explainers), which
// nn.GraphModel's WindowProbs/WindowProbsSignal/SpanProbs/ChannelSpanProbs
// accumulate in Path; recipes/archs/*.toml are the golden PyTorch nets,
// checked against testdata/golden/archs (and internal/graphgolden:
// occlusion, input gradients and Grad-CAM of each net from TOML and from
// ONNX against PyTorch's and Captum's files).
//
// # Receptive-field recomputation
//
//   - Receptive-field recomputation on graph networks
//     (sdk/nn/graph/window.go, Net.WindowProbs, Net.SpanProbs; through
//     nn.GraphModel for occlusion, LIME and the model service). The input
//     is run once keeping every node's value; a perturbed copy differs on
//     the input steps [lo, hi) (a window, or the hull of a copy's spans),
//     and node by node a Local op (conv1d with any padding, stride,
//     dilation and groups, pad, pools, batchnorm, activations, add and
//     concat over the hull of their inputs' ranges) changes only the
//     output steps [ceil((a - (k-1)d + pl)/s), floor((b-1+pl)/s) + 1)
//     whose window reads a changed step; those are recomputed by the op's
//     own kernel on the gathered input (the copy's values where it
//     changed, the base values elsewhere, the padding written out: zeros,
//     -inf for max pooling, a pad's value), 64 copies a kernel call with
//     the batch's widest range. From the first node that is not Local (a
//     global pool, flatten, linear) or whose padding is not written out
//     above, every copy is computed in full. When the ranges' work plus
//     the unperturbed pass is not below the copies' forward passes (LIME's
//     random masks: the hull is the input), batched forward passes are
//     taken. Path reports which and the FLOPs done; uaxai explain --model
//     on a graph prints it as a note, a run notes it for each (posterior,
//     explainer) pair (the driver's draws' PerturbedPath), uaxai bench
//     --archs under its table. Golden nets, window 60, stride 20: FCN
//     14.7%, ResNet1D 17.2%, InceptionTime 23.1% of the forward passes'
//     FLOPs.
//
// # Plans of a network with a global max pool
//
// A network whose output reads its input only through a global max pool
// (Op.MaxOverTime) after Local nodes, the paper's among them, has more
// plans, each exact in the sense above (the op's arithmetic at every
// step, up to float32 rounding, a copy's bits independent of the other
// copies of its call, batchfree_test.go):
//
//   - maxpool.go: the global-max shortcut: a copy's pooled value combines
//     the unperturbed input's prefix and suffix maxima with its
//     recomputed steps, instead of scanning the row;
//   - trunk.go, trunkcache.go: the trunk plan: the nodes up to the pool
//     (the trunk) give each copy's pooled vector, the nodes after it (the
//     head) run on pooled vectors laid out as columns (Op.Columns,
//     Op.FastColumns), and TrunkCache, keyed by the trunk's digest of
//     ops, attributes, wiring and parameter bits, keeps the pooled vectors
//     of a call, so that MC dropout's draws (dropout in the head) compute
//     the trunk once;
//   - edges.go: the boundary plan: copies perturbed on spans of every
//     channel whose boundaries are at least the trunk's reach apart
//     (occlusion's wide windows, LIME's segments): each boundary's dirty
//     steps are computed once per call and a copy's pooled vector is the
//     first maximum of its regions' range maxima and its boundaries'
//     maxima;
//   - planes.go: where every trunk node has stride 1, the boundary plan
//     computes a batch of boundaries as columns: plane d of a value holds
//     step b+d of each boundary b, and a node computes all its planes by
//     one call (Op.Taps: a convolution as one product of its weights with
//     the im2col taps, a max pool as the first maximum of its taps;
//     per-step ops by Columns);
//   - run.go (sparseChain): a layer's gradient alone (Grad-CAM) read
//     through a global max pool is computed at each row's maximum only;
//     its forward pass keeps the layer's value in the request's Act and
//     folds the ReLUs below the layer into their convolutions
//     (Op.EvalFuses; the same bits), and a layer after the output node
//     is an error.
//
// # Tests
//
//   - sdk/nn/graph/window_test.go: the receptive-field path against one
//     batched forward pass of the perturbed copies (within 2e-6 of the
//     largest probability) on graphs with asymmetric padding, a pad value,
//     stride, dilation, groups, padded max/average pooling, residual adds,
//     InceptionTime-like concats, flatten and a softmax output, windows of
//     width 1, 3, T/3 and T at every start, constant and signal baselines,
//     channel spans; the path taken (a narrow window on a deep residual
//     net under the bound of its grown windows, in full from the global
//     pool; the whole input by forward passes), an op whose padding it
//     cannot write out (computed in full from that node), no allocation
//     per window, and errors.
//     plugins/explainer/{occlusion,lime}/graph_test.go,
//     sdk/driver/graphwindows_test.go and internal/graphgolden: maps and
//     served windows by the path equal those of forward passes, and the
//     golden nets' occlusion takes it and still matches Captum's.
package graph
