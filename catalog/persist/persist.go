package persist

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/storage"
)

// TableID is the reserved state-table id holding the catalog.
const TableID = 1

var (
	relPrefix = []byte{0, 0, 0, TableID, 0, 0, 'r'}
	metaKey   = []byte{0, 0, 0, TableID, 0, 0, 'm'}
)

func relKey(id uint32) []byte {
	k := append([]byte(nil), relPrefix...)
	return binary.BigEndian.AppendUint32(k, id)
}

type meta struct {
	NextID uint32 `json:"next_id"`
}

var paramsKey = []byte{0, 0, 0, TableID, 0, 0, 'p'}

// SaveParams records the system parameters (ALTER SYSTEM SET) in b.
func SaveParams(b *storage.Batch, params map[string]string) error {
	v, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("persist system parameters: %w", err)
	}
	b.Put(paramsKey, v)
	return nil
}

// LoadParams reads the system parameters (empty when none were set).
func LoadParams(ctx context.Context, kv storage.KV) (map[string]string, error) {
	params := map[string]string{}
	v, ok, err := kv.Get(ctx, paramsKey, kv.CommittedEpoch(), nil)
	if err != nil || !ok {
		return params, err
	}
	if err := json.Unmarshal(v, &params); err != nil {
		return nil, fmt.Errorf("load system parameters: %w", err)
	}
	return params, nil
}

var rolesKey = []byte{0, 0, 0, TableID, 0, 0, 'u'}

// SaveRoles records the roles (users) in b.
func SaveRoles(b *storage.Batch, roles []catalog.Role) error {
	v, err := json.Marshal(roles)
	if err != nil {
		return fmt.Errorf("persist roles: %w", err)
	}
	b.Put(rolesKey, v)
	return nil
}

// LoadRoles reads the roles (none when none were saved).
func LoadRoles(ctx context.Context, kv storage.KV) ([]catalog.Role, error) {
	v, ok, err := kv.Get(ctx, rolesKey, kv.CommittedEpoch(), nil)
	if err != nil || !ok {
		return nil, err
	}
	var roles []catalog.Role
	if err := json.Unmarshal(v, &roles); err != nil {
		return nil, fmt.Errorf("load roles: %w", err)
	}
	return roles, nil
}

// Save records a relation descriptor and the id counter in b, its secrets
// sealed when a key is set (secrets.go).
func Save(b *storage.Batch, r *catalog.Relation, nextID uint32) error {
	stored, err := sealed(r)
	if err != nil {
		return fmt.Errorf("persist relation %s: %w", r.Name, err)
	}
	v, err := json.Marshal(stored)
	if err != nil {
		return fmt.Errorf("persist relation %s: %w", r.Name, err)
	}
	b.Put(relKey(r.ID), v)
	m, _ := json.Marshal(meta{NextID: nextID})
	b.Put(metaKey, m)
	return nil
}

// Delete removes a relation descriptor in b.
func Delete(b *storage.Batch, id uint32) { b.Delete(relKey(id)) }

// Load reads every descriptor at the committed epoch.
func Load(ctx context.Context, kv storage.KV) ([]*catalog.Relation, uint32, error) {
	rels, nextID, _, err := LoadReport(ctx, kv)
	return rels, nextID, err
}

// LoadReport is Load that also names the relations stored with a secret
// in clear (saved before a key was set), which the caller saves again to
// seal them.
func LoadReport(ctx context.Context, kv storage.KV) ([]*catalog.Relation, uint32, []uint32, error) {
	epoch := kv.CommittedEpoch()
	var nextID uint32
	if v, ok, err := kv.Get(ctx, metaKey, epoch, nil); err != nil {
		return nil, 0, nil, fmt.Errorf("load catalog meta: %w", err)
	} else if ok {
		var m meta
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, 0, nil, fmt.Errorf("load catalog meta: %w", err)
		}
		nextID = m.NextID
	}
	upper := append([]byte(nil), relPrefix...)
	upper[len(upper)-1]++
	it, err := kv.Scan(ctx, relPrefix, upper, epoch)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("load catalog: %w", err)
	}
	defer it.Close()
	var rels []*catalog.Relation
	var clear []uint32
	for {
		if err := it.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, 0, nil, fmt.Errorf("load catalog: %w", err)
		}
		r := new(catalog.Relation)
		if err := json.Unmarshal(it.Value(), r); err != nil {
			return nil, 0, nil, fmt.Errorf("load catalog relation %x: %w", it.Key(), err)
		}
		if inClear(r) {
			clear = append(clear, r.ID)
		}
		if err := opened(r); err != nil {
			return nil, 0, nil, fmt.Errorf("load catalog: %w", err)
		}
		rels = append(rels, r)
	}
	return rels, nextID, clear, it.Close()
}

var schemasKey = []byte{0, 0, 0, TableID, 0, 0, 's'}

// SaveSchemas records CREATE SCHEMA's schemas (name -> oid) and the id
// counter their oids come from in b.
func SaveSchemas(b *storage.Batch, schemas map[string]uint32, nextID uint32) error {
	v, err := json.Marshal(schemas)
	if err != nil {
		return fmt.Errorf("persist schemas: %w", err)
	}
	b.Put(schemasKey, v)
	m, _ := json.Marshal(meta{NextID: nextID})
	b.Put(metaKey, m)
	return nil
}

// LoadSchemas reads the schemas SaveSchemas recorded (none when none were).
func LoadSchemas(ctx context.Context, kv storage.KV) (map[string]uint32, error) {
	schemas := map[string]uint32{}
	v, ok, err := kv.Get(ctx, schemasKey, kv.CommittedEpoch(), nil)
	if err != nil || !ok {
		return schemas, err
	}
	if err := json.Unmarshal(v, &schemas); err != nil {
		return nil, fmt.Errorf("load schemas: %w", err)
	}
	return schemas, nil
}

var databasesKey = []byte{0, 0, 0, TableID, 0, 0, 'd'}

// SaveDatabases records CREATE DATABASE's databases (all but dev) and the id
// counter their oids come from in b.
func SaveDatabases(b *storage.Batch, dbs []catalog.DatabaseDesc, nextID uint32) error {
	v, err := json.Marshal(dbs)
	if err != nil {
		return fmt.Errorf("persist databases: %w", err)
	}
	b.Put(databasesKey, v)
	m, _ := json.Marshal(meta{NextID: nextID})
	b.Put(metaKey, m)
	return nil
}

var functionsKey = []byte{0, 0, 0, TableID, 0, 0, 'f'}

// SaveFunctions records CREATE FUNCTION's functions and the id counter
// their ids come from in b.
func SaveFunctions(b *storage.Batch, fs []*catalog.Function, nextID uint32) error {
	v, err := json.Marshal(fs)
	if err != nil {
		return fmt.Errorf("persist functions: %w", err)
	}
	b.Put(functionsKey, v)
	m, _ := json.Marshal(meta{NextID: nextID})
	b.Put(metaKey, m)
	return nil
}

// LoadDatabases reads the databases SaveDatabases recorded (none when none were).
func LoadDatabases(ctx context.Context, kv storage.KV) ([]catalog.DatabaseDesc, error) {
	var dbs []catalog.DatabaseDesc
	v, ok, err := kv.Get(ctx, databasesKey, kv.CommittedEpoch(), nil)
	if err != nil || !ok {
		return nil, err
	}
	if err := json.Unmarshal(v, &dbs); err != nil {
		return nil, fmt.Errorf("load databases: %w", err)
	}
	return dbs, nil
}

// LoadFunctions reads the functions SaveFunctions recorded (none when none were).
func LoadFunctions(ctx context.Context, kv storage.KV) ([]*catalog.Function, error) {
	var fs []*catalog.Function
	v, ok, err := kv.Get(ctx, functionsKey, kv.CommittedEpoch(), nil)
	if err != nil || !ok {
		return nil, err
	}
	if err := json.Unmarshal(v, &fs); err != nil {
		return nil, fmt.Errorf("load functions: %w", err)
	}
	return fs, nil
}
