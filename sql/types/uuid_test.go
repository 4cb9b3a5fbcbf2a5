package types

import (
	"errors"
	"testing"
)

func TestUUIDText(t *testing.T) {
	const canon = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	for _, in := range []string{
		canon,
		"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
		"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
		"a0eebc999c0b4ef8bb6d6bb9bd380a11",
		"a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
		"{a0eebc999c0b4ef8bb6d6bb9bd380a11}",
	} {
		d, err := ParseText(TUuid, in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if len(d.S) != 16 {
			t.Fatalf("%s: %d bytes", in, len(d.S))
		}
		if got := FormatText(TUuid, &d); got != canon {
			t.Errorf("%s: got %s", in, got)
		}
	}
	for _, in := range []string{
		"", "a0eebc99", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
		"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
		"a0eeb-c99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g", "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
		"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
	} {
		if _, err := ParseText(TUuid, in); !errors.Is(err, ErrInvalidText) {
			t.Errorf("%q: want invalid text, got %v", in, err)
		}
	}
}

func TestUUIDOrder(t *testing.T) {
	a, _ := ParseText(TUuid, "00000000-0000-0000-0000-0000000000ff")
	b, _ := ParseText(TUuid, "80000000-0000-0000-0000-000000000000")
	if CompareNonNull(TUuid, &a, &b) >= 0 || CompareNonNull(TUuid, &b, &a) <= 0 {
		t.Fatal("uuids must order by their bytes, unsigned")
	}
}
