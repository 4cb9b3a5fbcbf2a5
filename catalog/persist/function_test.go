package persist

import (
	"context"
	"reflect"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

// TestFunctionsRoundTrip saves user functions and loads them back, with the
// id counter; no functions saved loads none, and the relations are not
// disturbed by the functions' key.
func TestFunctionsRoundTrip(t *testing.T) {
	ctx := context.Background()
	kv := memkv.New()
	if fs, err := LoadFunctions(ctx, kv); err != nil || len(fs) != 0 {
		t.Fatalf("empty store: %v, %v", fs, err)
	}
	fs := []*catalog.Function{
		{ID: 30, Schema: "public", Name: "f", ArgNames: []string{"x"}, ArgTypes: []types.T{types.TInt32},
			Returns: types.TInt32, Body: "SELECT x + 1", Volatility: "i"},
		{ID: 31, Schema: "s", Name: "g", ArgNames: []string{""}, ArgTypes: []types.T{types.ArrayOf(types.TVarchar)},
			Returns: types.TVarchar, Body: "SELECT array_to_string($1, ',')", Volatility: "v", Strict: true},
	}
	var b storage.Batch
	if err := SaveFunctions(&b, fs, 32); err != nil {
		t.Fatal(err)
	}
	if err := Save(&b, &catalog.Relation{ID: 29, Schema: "public", Name: "t", Kind: catalog.KindTable}, 32); err != nil {
		t.Fatal(err)
	}
	if err := kv.Commit(ctx, 1, &b); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFunctions(ctx, kv)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, fs) {
		t.Fatalf("loaded %+v, want %+v", got, fs)
	}
	rels, next, err := Load(ctx, kv)
	if err != nil || len(rels) != 1 || rels[0].ID != 29 || next != 32 {
		t.Fatalf("relations %v, next id %d, %v", rels, next, err)
	}
}
