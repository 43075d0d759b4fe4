// Package golden locates and reads the reference files under
// testdata/golden at the repository root for tests.
//
// # Tests
//
//   - testdata/golden/: PyTorch and Captum references (READMEs give the
//     exact formulas; testdata/peers/ the scripts that made them). A
//     missing golden file fails its test.
package golden
