// Package gradients is the gradient family of attribution operators, as
// Captum defines them, each on the class probability p_c of the input's
// target class c, through nn.Model.InputGrad in batches (so on every model
// uaxai runs: Go networks, graph and ONNX networks, PyTorch models through
// the model service). With g(z) = d p_c(z) / d z, x the input (C channels
// of T samples, channel-major, every formula per element) and x' the
// baseline (a constant, default 0):
//
//   - explainer.saliency: |g(x)| (abs = true, Captum's default), or g(x);
//   - explainer.input_x_gradient: x * g(x) (Captum's InputXGradient);
//   - explainer.integrated_gradients: (x - x') * sum_i w_i g(x' + a_i (x - x')),
//     the path integral by n_steps nodes a_i and weights w_i of a rule
//     (method: "gausslegendre", Captum's default, or "riemann_left",
//     "riemann_right", "riemann_middle", "riemann_trapezoid");
//   - explainer.smoothgrad: the saliency of nt_samples noisy copies
//     x + N(0, stdevs^2), their mean (nt_type "smoothgrad"), the mean of
//     their squares ("smoothgrad_sq") or their variance E[s^2] - E[s]^2
//     ("vargrad") (Captum's NoiseTunnel over Saliency);
//   - explainer.gradient_shap: the mean over n_samples of
//     (x_k - x') * g(x' + a_k (x_k - x')), x_k = x + N(0, stdevs^2) and
//     a_k ~ U(0, 1) (Captum's GradientShap with one baseline).
//
// The random draws of smoothgrad and gradient_shap come from the input's
// seed (sdk.ExplainRequest.Seeds): the same bytes for any batch, worker
// count or shard.
package gradients
