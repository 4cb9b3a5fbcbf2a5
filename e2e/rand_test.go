package e2e

import "math/rand"

// newRand returns a seeded source (tests print their seed).
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }
