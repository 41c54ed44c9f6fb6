// The Verifier module.
