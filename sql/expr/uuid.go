package expr

import (
	"crypto/rand"

	"github.com/tributary/tributary/sql/types"
)

func init() {
	// gen_random_uuid returns a version 4 (random) uuid, a new one per call.
	def("gen_random_uuid", types.TUuid).r(func(*Ctx, []types.Datum) (types.Datum, error) {
		return types.DString(NewRandomUUID()), nil
	}).vol_(Volatile)
}

// NewRandomUUID returns the 16 bytes of a new version 4 uuid (RFC 4122).
func NewRandomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return string(b[:])
}
