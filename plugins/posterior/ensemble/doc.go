// Package ensemble is the deep-ensemble posterior "posterior.ensemble": K
// networks trained independently from their own seeds (initialisation and
// shuffling), each a draw of the implicit distribution q_phi. It is finite:
// draw s is member s, so S <= K.
package ensemble
