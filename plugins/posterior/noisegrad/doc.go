// Package noisegrad is "posterior.noisegrad": NoiseGrad's distribution of
// networks (Bykov et al., "NoiseGrad: enhancing explanations by
// introducing stochasticity to model weights", AAAI 2022) as a posterior
// of uaxai. Around the trained deterministic network theta (post hoc, on
// "posterior.deterministic": the same network a recipe's deterministic
// posterior of the same seed trains), draw s multiplies every trainable
// parameter by its own Gaussian factor:
//
//	theta_s[j] = theta[j] (1 + sigma eps_sj),  eps_sj ~ N(0, 1),
//
// batchnorm running statistics (buffers) kept as they are. sigma is the
// key "sigma" (default 0.2, NoiseGrad's). Explained through Saliency the
// push-forward of this posterior is NoiseGrad's explanation distribution,
// its mean NoiseGrad; through SmoothGrad, FusionGrad (noise on the weights
// and the inputs). Draw s's factors come from the stream of its seed, so a
// draw is the same network whatever the other draws.
package noisegrad
