package catalog

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// Function is a user-defined SQL-language scalar function (CREATE
// FUNCTION ... LANGUAGE SQL): its body is one SELECT of an expression over
// the arguments, which the binder inlines at every call.
type Function struct {
	ID     uint32 `json:"id"`
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// ArgNames are the arguments' names ("" for an unnamed one), ArgTypes
	// their types.
	ArgNames []string  `json:"arg_names,omitempty"`
	ArgTypes []types.T `json:"arg_types,omitempty"`
	Returns  types.T   `json:"returns"`
	// Body is the SQL text of the body's query ("SELECT expr").
	Body string `json:"body"`
	// Volatility is PostgreSQL's provolatile: "i", "s" or "v".
	Volatility string `json:"volatility"`
	// Strict: a NULL argument gives NULL without evaluating the body.
	Strict bool `json:"strict,omitempty"`
	// Definition is the CREATE FUNCTION statement's text.
	Definition string    `json:"definition,omitempty"`
	Owner      string    `json:"owner,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Signature is name(type, ...), as PostgreSQL names a function in messages.
func (f *Function) Signature() string { return Signature(f.Name, f.ArgTypes) }

// Signature is name(type, ...).
func Signature(name string, args []types.T) string {
	s := name + "("
	for i, t := range args {
		if i > 0 {
			s += ", "
		}
		s += t.String()
	}
	return s + ")"
}

// SameArgs reports whether f takes exactly the argument types ts.
func (f *Function) SameArgs(ts []types.T) bool {
	return slices.EqualFunc(f.ArgTypes, ts, func(a, b types.T) bool { return a.String() == b.String() })
}

// FunctionReader is what the binder reads of the user functions. Catalog and
// Path implement it; a catalog.Reader without it has no user functions.
type FunctionReader interface {
	// FunctionsNamed returns the overloads of a function (schema "": every
	// schema's), ordered by id.
	FunctionsNamed(schema, name string) []*Function
}

// UserFunctions returns every user function, ordered by id.
func (c *Catalog) UserFunctions() []*Function {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Function, 0, len(c.mu.funcs))
	for _, f := range c.mu.funcs {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// FunctionsNamed implements FunctionReader.
func (c *Catalog) FunctionsNamed(schema, name string) []*Function {
	var out []*Function
	for _, f := range c.UserFunctions() {
		if f.Name == name && (schema == "" || f.Schema == schema) {
			out = append(out, f)
		}
	}
	return out
}

// SetFunctions installs the user functions (at start-up, and after CREATE
// or DROP FUNCTION); their ids come from NextID.
func (c *Catalog) SetFunctions(fs []*Function) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.funcs = make(map[uint32]*Function, len(fs))
	for _, f := range fs {
		c.mu.funcs[f.ID] = f
		if f.ID >= c.mu.nextID {
			c.mu.nextID = f.ID + 1
		}
	}
}

// FunctionUsers returns the relations whose definitions call function id.
func (c *Catalog) FunctionUsers(id uint32) []*Relation {
	var out []*Relation
	for _, r := range c.Relations() {
		if slices.Contains(r.Functions, id) {
			out = append(out, r)
		}
	}
	return out
}

// ErrNoFunction is PostgreSQL's 42883 for a function that does not exist.
func ErrNoFunction(name string, args []types.T) error {
	return types.Errorf(types.ErrUndefinedFunction, "function %s does not exist", Signature(name, args))
}

// sqlLangOID is pg_language's oid of language sql.
const sqlLangOID = 14

// FunctionProcRows are pg_proc's rows for user functions (ProcRows' columns):
// their own oids, language sql, the body as prosrc.
func FunctionProcRows(fs []*Function, schemaOID func(string) uint32) [][]types.Datum {
	rows := make([][]types.Datum, 0, len(fs))
	for _, f := range fs {
		args := make([]string, len(f.ArgTypes))
		for i, t := range f.ArgTypes {
			args[i] = strconv.FormatUint(uint64(t.OID()), 10)
		}
		vol := byte('v')
		if f.Volatility != "" {
			vol = f.Volatility[0]
		}
		rows = append(rows, []types.Datum{
			dI(int64(f.ID)), dS(f.Name), dI(int64(schemaOID(f.Schema))), dI(OwnerOID),
			dI(sqlLangOID), dC('f'), dB(false), dB(f.Strict),
			dB(false), dC(vol), dI(int64(len(args))), dI(int64(f.Returns.OID())),
			dS(strings.Join(args, " ")), dS(f.Body), null,
		})
	}
	return rows
}

// FunctionsNamed implements FunctionReader: an unqualified name finds the
// functions of the search path's schemas only.
func (p Path) FunctionsNamed(schema, name string) []*Function {
	fs := p.Catalog.FunctionsNamed(schema, name)
	if schema != "" {
		return fs
	}
	return slices.DeleteFunc(fs, func(f *Function) bool { return !slices.Contains(p.Search, f.Schema) })
}
