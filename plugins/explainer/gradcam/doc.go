// Package gradcam is the attribution operator "explainer.gradcam":
// Grad-CAM on a named layer of a 1-D network,
//
//	alpha_c = (1/T) sum_t d p_target / d A_c(t),   cam(t) = sum_c alpha_c A_c(t),
//
// with A the layer's output (C channels of T samples; for the paper's
// conv4, its output before the ReLU). The map is signed: no ReLU is
// applied, as Captum's LayerGradCam with relu_attributions=False.
//
// The map is over time only: the layer's channels mix every input channel,
// so with C_in input channels of N samples (the map channel-major, as the
// input) each channel's row is the same time map,
//
//	map[ch*N+u] = cam_aligned(u)   for every input channel ch,
//
// cam_aligned the alignment of cam to N samples below. Grad-CAM does not
// tell the input channels apart; occlusion with channels = "each" and
// gradient x input do.
//
// Configuration: "layer", the layer's name (default "conv4"), and
// "align", how the T layer positions become a map of the input's length
// N, one of:
//
//   - "centre" (the default): each input sample takes the layer position
//     whose receptive field is centred nearest to it. Position t reads
//     the input samples t*S + a .. t*S + b (the hull of its receptive
//     field), centred at t*S + (a+b)/2, and sample u takes
//     cam(min(max(floor((2u - a - b + S) / (2S)), 0), T-1))
//     (CentreSpan): the position of the nearest centre, the later of two
//     equally near, the first position before the first centre and the
//     last after the last. On the paper's network (valid convolutions)
//     S = 1, a = 0 and b = R-1, R = 1 + sum of (kernel - 1) over the
//     convolutions and max pools up to the layer (T = N - R + 1): sample
//     u takes cam(u - floor((R-1)/2)), position t written at the centre
//     of its field, input sample t + floor((R-1)/2) (Centre). On a graph
//     network (Arch.Graph, nn.GraphModel) S, a and b are composed through
//     every node from the input to the layer (graph.Net.LayerSpan): S the
//     product of the strides, a and b the ends of each op's window
//     (padding and dilation included) in input samples, the hull over
//     the paths of a residual addition or a concatenation. There a
//     stride-1 layer whose field is centred on its position (a + b = 0
//     or 1: 'same' padding, an even kernel's extra zero on the right)
//     gives every sample its own position, the map of align = "none"
//     (several even kernels shift it: ResNet1D's block3, a + b = 3, gives
//     sample u position u-1); a strided layer
//     gives each sample a position whose field holds it (when some
//     position's does), in the order of time. A graph layer behind a
//     global pool, flatten or linear node (its positions read the whole
//     input), or behind a join of paths of different strides, is an
//     error. Every input channel gets the same map.
//   - "none": the T values as they are, position t at input sample t
//     (the first sample of its receptive field), in every input channel;
//     the last N - T samples, where no receptive field starts, get 0 (the
//     host takes maps of the input's length). For the paper's conv4 the
//     first 630 values are Captum's raw LayerGradCam map. Raw gives the
//     unaligned map of any layer.
//   - "linear": the T positions resampled to the N samples as PyTorch's
//     F.interpolate(mode="linear", align_corners=False) does (Captum's
//     LayerAttribution.interpolate with interpolate_mode="linear"), with
//     no regard to receptive fields: sample u reads position
//     s = max((u + 0.5) T/N - 0.5, 0), dst(u) = (1 - w) cam(i) + w cam(i')
//     with i = floor(s), i' = min(i + 1, T - 1), w = s - i (Linear).
//   - "nearest": the same with mode="nearest" (Captum's default):
//     dst(u) = cam(min(floor(u T/N), T - 1)) (Nearest).
//
// A graph network's layers are module paths (graph.Net.Layer), as are
// those of a model known by its shape only (a PyTorch draw served by the
// model service: its Arch has neither layers nor a graph, its layers are
// module paths such as "block3" or "inc3.convs.2", a recurrent layer's
// output taken as hidden x steps). On both, align = "none" takes layers of
// T <= N positions (the map the first T samples of each row). A model
// known by its shape only has no receptive fields: it takes "none",
// "linear" or "nearest", and "centre" is an error that says so.
package gradcam
