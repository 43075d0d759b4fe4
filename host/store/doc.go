// Package store is the cache of fitted posteriors: an sdk.Artifact is kept
// as one safetensors file named by a hash of everything that produced it
// (architecture, data, training protocol, plugin ID, version and config,
// seed).
//
// An entry carries the SHA-256 of its contents (Checksum), checked on
// every read. An entry that does not read back whole (a flipped bit, a
// truncation, a non-finite value, an older format) is reported with its
// path, set aside under <key>.safetensors.corrupt[-N] (renamed, never
// deleted, so it can be inspected), and fitted again. Put refuses an
// artifact with a non-finite value, so such a fit is never stored.
//
// The posterior cache (entries checksummed, written atomically, locked
// while fitted).
package store
