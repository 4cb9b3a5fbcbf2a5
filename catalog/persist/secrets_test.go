package persist

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

// TestSecretsAtRest saves a sink and a source whose options hold
// passwords: with a key the stored bytes hold none of them and Load gives
// them back; a catalog saved without a key (clear) still loads; another
// key cannot open them.
func TestSecretsAtRest(t *testing.T) {
	t.Cleanup(func() { _ = SetSecretKey(nil) })
	ctx := context.Background()
	secrets := []string{"pg-pa''ss", "kafka-s3cret", "url-pw"}
	sink := &catalog.Relation{ID: 20, Schema: "public", Name: "s", Kind: catalog.KindSink,
		Definition: "CREATE SINK s FROM t WITH (connector = 'postgres', host = 'h', password = 'pg-pa''ss', sasl.secret = 'kafka-s3cret', url = 'postgres://u:url-pw@h/db')",
		Sink:       &catalog.SinkSettings{Props: map[string]string{"connector": "postgres", "host": "h", "password": "pg-pa'ss", "sasl.secret": "kafka-s3cret", "url": "postgres://u:url-pw@h/db"}}}
	src := &catalog.Relation{ID: 21, Schema: "public", Name: "c", Kind: catalog.KindSource,
		Definition: "CREATE SOURCE c WITH (connector = 'postgres-cdc', password = 'pg-pa''ss')",
		Connector:  &catalog.Connector{Props: map[string]string{"connector": "postgres-cdc", "password": "pg-pa'ss"}}}
	save := func(kv *memkv.Store, epoch uint64, rels ...*catalog.Relation) {
		t.Helper()
		var b storage.Batch
		for _, r := range rels {
			if err := Save(&b, r, 22); err != nil {
				t.Fatal(err)
			}
		}
		if err := kv.Commit(ctx, epoch, &b); err != nil {
			t.Fatal(err)
		}
	}
	raw := func(kv *memkv.Store) []byte {
		t.Helper()
		var all []byte
		for _, id := range []uint32{20, 21} {
			v, _, err := kv.Get(ctx, relKey(id), kv.CommittedEpoch(), nil)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, v...)
		}
		return all
	}
	check := func(kv *memkv.Store, what string) {
		t.Helper()
		rels, _, err := Load(ctx, kv)
		if err != nil {
			t.Fatalf("%s: load: %v", what, err)
		}
		if len(rels) != 2 || rels[0].Definition != sink.Definition || rels[0].Sink.Props["password"] != "pg-pa'ss" ||
			rels[0].Sink.Props["url"] != sink.Sink.Props["url"] || rels[0].Sink.Props["sasl.secret"] != "kafka-s3cret" ||
			rels[1].Connector.Props["password"] != "pg-pa'ss" || rels[1].Definition != src.Definition {
			t.Fatalf("%s: loaded %+v %+v", what, rels[0], rels[1])
		}
	}

	// Without a key (an older catalog): stored in clear, loads.
	plainKV := memkv.New()
	save(plainKV, 1, sink, src)
	if !bytes.Contains(raw(plainKV), []byte("kafka-s3cret")) {
		t.Fatal("without a key the secret should be stored as given")
	}
	keyFile := filepath.Join(t.TempDir(), "secret.key")
	key, err := LoadOrCreateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st.Mode(), err)
	}
	if again, err := LoadOrCreateKey(keyFile); err != nil || !bytes.Equal(again, key) {
		t.Fatalf("the key file read again: %v", err)
	}
	if err := SetSecretKey(key); err != nil {
		t.Fatal(err)
	}
	check(plainKV, "a catalog in clear, with a key")
	if _, _, clear, err := LoadReport(ctx, plainKV); err != nil || len(clear) != 2 {
		t.Fatalf("relations in clear: %v, %v", clear, err)
	}

	kv := memkv.New()
	save(kv, 1, sink, src)
	stored := raw(kv)
	for _, s := range append(secrets, "pg-pa'ss") {
		if bytes.Contains(stored, []byte(s)) {
			t.Fatalf("the stored catalog holds %q:\n%s", s, stored)
		}
	}
	if !bytes.Contains(stored, []byte(tokenPrefix)) || !bytes.Contains(stored, []byte("host = 'h'")) {
		t.Fatalf("stored: %s", stored)
	}
	if sink.Sink.Props["password"] != "pg-pa'ss" {
		t.Fatal("Save changed the relation it was given")
	}
	check(kv, "sealed")
	if _, _, clear, err := LoadReport(ctx, kv); err != nil || len(clear) != 0 {
		t.Fatalf("relations in clear after sealing: %v, %v", clear, err)
	}

	other := make([]byte, 32)
	if err := SetSecretKey(other); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(ctx, kv); !errors.Is(err, ErrNoSecretKey) {
		t.Fatalf("another key: %v", err)
	}
	if err := SetSecretKey(nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(ctx, kv); !errors.Is(err, ErrNoSecretKey) {
		t.Fatalf("no key: %v", err)
	}
}
