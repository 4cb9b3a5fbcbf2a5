package session

import (
	"context"
	"fmt"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// User functions. CREATE FUNCTION ... LANGUAGE SQL records a scalar
// function whose body is one SELECT of an expression (persisted with the
// catalog, its id taken from the relation ids); the binder inlines it at
// every call (planner/bind/function.go). Views, materialized views and
// sinks record the functions they call: DROP FUNCTION refuses while one
// exists (2BP01), or with CASCADE drops them too.

// typeOfName converts a parsed type name.
func typeOfName(tn parser.TypeName) (types.T, error) {
	t, err := types.FromName(tn.Name, tn.Args)
	if err != nil {
		return t, err
	}
	if tn.Array {
		t = types.ArrayOf(t)
	}
	return t, nil
}

// saveFunctions persists and installs the user functions.
func (s *Session) saveFunctions(ctx context.Context, fs []*catalog.Function) error {
	if _, err := s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		return persist.SaveFunctions(b, fs, s.eng.Catalog.PeekNextID())
	}); err != nil {
		return err
	}
	s.eng.Catalog.SetFunctions(fs)
	return nil
}

// createFunction runs CREATE [OR REPLACE] FUNCTION.
func (s *Session) createFunction(ctx context.Context, n *parser.CreateFunction) (pgwire.Result, error) {
	switch {
	case n.Language != "sql":
		if n.Language == "plpgsql" || n.Language == "internal" || n.Language == "c" {
			return nil, types.Errorf(types.ErrUnsupported, "functions in language \"%s\" are not supported (only LANGUAGE SQL)", n.Language)
		}
		return nil, types.Errorf(types.ErrUndefinedObject, "language \"%s\" does not exist", n.Language)
	case n.ReturnsSet:
		return nil, types.Errorf(types.ErrUnsupported, "set-returning user functions (RETURNS TABLE | SETOF) are not supported")
	}
	schema, err := s.schemaOf(n.Name)
	if err != nil {
		return nil, err
	}
	f := &catalog.Function{Schema: schema, Name: n.Name.Name, ArgNames: n.ArgNames, Body: n.Body,
		Volatility: n.Volatility, Strict: n.Strict, Definition: n.Text(), Owner: s.currentUser(), CreatedAt: time.Now().UTC()}
	seen := map[string]bool{}
	for i, tn := range n.ArgTypes {
		t, err := typeOfName(tn)
		if err != nil {
			return nil, err
		}
		f.ArgTypes = append(f.ArgTypes, t)
		if name := n.ArgNames[i]; name != "" {
			if seen[name] {
				return nil, types.Errorf(types.ErrInvalidFunctionDef, "parameter name \"%s\" used more than once", name)
			}
			seen[name] = true
		}
	}
	if f.Returns, err = typeOfName(n.Returns); err != nil {
		return nil, err
	}
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	fs := s.eng.Catalog.UserFunctions()
	var old *catalog.Function
	k := -1
	for i, g := range fs {
		if g.Schema == f.Schema && g.Name == f.Name && g.SameArgs(f.ArgTypes) {
			old, k = g, i
		}
	}
	if old != nil && !n.OrReplace {
		return nil, types.Errorf(types.ErrDuplicateFunction, "function \"%s\" already exists with same argument types", f.Name)
	}
	if old != nil {
		if old.Returns != f.Returns {
			return nil, &types.Error{Kind: types.ErrInvalidFunctionDef, Msg: "cannot change return type of existing function",
				Hint: fmt.Sprintf("Use DROP FUNCTION %s first.", old.Signature())}
		}
		if users := s.eng.Catalog.FunctionUsers(old.ID); len(users) > 0 {
			return nil, &types.Error{Kind: types.ErrUnsupported,
				Msg:    fmt.Sprintf("cannot replace function %s because other objects use it", old.Signature()),
				Detail: fmt.Sprintf("%s %s calls it (its body was inlined when it was created)", users[0].Kind, users[0].Name),
				Hint:   "Drop the objects that use it first."}
		}
		f.ID = old.ID
	}
	if err := s.binder(nil).CheckFunction(f); err != nil {
		return nil, err
	}
	if old != nil {
		fs[k] = f
	} else {
		f.ID = s.eng.Catalog.NextID()
		fs = append(fs, f)
	}
	if err := s.saveFunctions(ctx, fs); err != nil {
		return nil, err
	}
	return tagOnly("CREATE FUNCTION"), nil
}

// dropFunction runs DROP FUNCTION [IF EXISTS] name[(types)] [, ...]
// [CASCADE | RESTRICT].
func (s *Session) dropFunction(ctx context.Context, n *parser.DropFunction) (pgwire.Result, error) {
	var victims []*catalog.Function
	for _, ref := range n.Funcs {
		var args []types.T
		for _, tn := range ref.Args {
			t, err := typeOfName(tn)
			if err != nil {
				return nil, err
			}
			args = append(args, t)
		}
		var match []*catalog.Function
		for _, f := range s.cat().FunctionsNamed(ref.Name.Schema, ref.Name.Name) {
			if !ref.HasArgs || f.SameArgs(args) {
				match = append(match, f)
			}
		}
		switch {
		case len(match) == 0 && n.IfExists:
			what := ref.Name.Name
			if ref.HasArgs {
				what = catalog.Signature(ref.Name.Name, args)
			}
			s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("function %s does not exist, skipping", what))
			continue
		case len(match) == 0 && ref.HasArgs:
			return nil, catalog.ErrNoFunction(ref.Name.Name, args)
		case len(match) == 0:
			return nil, types.Errorf(types.ErrUndefinedFunction, "could not find a function named \"%s\"", ref.Name.Name)
		case len(match) > 1:
			return nil, &types.Error{Kind: types.ErrAmbiguousFunction, Msg: fmt.Sprintf("function name \"%s\" is not unique", ref.Name.Name),
				Hint: "Specify the argument list to select the function unambiguously."}
		}
		if !s.superuser() && match[0].Owner != s.currentUser() {
			return nil, types.Errorf(types.ErrInsufficientPrivilege, "must be owner of function %s", match[0].Name)
		}
		victims = append(victims, match[0])
	}
	if err := s.dropFunctions(ctx, victims, n.Cascade); err != nil {
		return nil, err
	}
	return tagOnly("DROP FUNCTION"), nil
}

// dropFunctions drops user functions: what calls them goes first (with
// cascade), or refuses the drop (2BP01).
func (s *Session) dropFunctions(ctx context.Context, victims []*catalog.Function, cascade bool) error {
	for _, f := range victims {
		for _, r := range s.eng.Catalog.FunctionUsers(f.ID) {
			if r.Kind == catalog.KindTable {
				// PostgreSQL's CASCADE drops the default or generated
				// column, not the table; Tributary cannot yet.
				return &types.Error{Kind: types.ErrDependentObjects,
					Msg:    fmt.Sprintf("cannot drop function %s because other objects depend on it", f.Signature()),
					Detail: fmt.Sprintf("a default or generated column of table %s depends on function %s", r.Name, f.Signature()),
					Hint:   "Drop the table, or the column, first."}
			}
			if !cascade {
				return &types.Error{Kind: types.ErrDependentObjects,
					Msg:    fmt.Sprintf("cannot drop function %s because other objects depend on it", f.Signature()),
					Detail: fmt.Sprintf("%s %s depends on function %s", r.Kind, r.Name, f.Signature()),
					Hint:   "Use DROP ... CASCADE to drop the dependent objects too."}
			}
		}
	}
	for _, f := range victims {
		for _, r := range s.eng.Catalog.FunctionUsers(f.ID) {
			kind, ok := parserKind[r.Kind]
			if !ok {
				continue
			}
			if _, err := s.drop(ctx, &parser.Drop{Kind: kind, Names: []parser.ObjectName{{Schema: r.Schema, Name: r.Name}}, IfExists: true, Cascade: true}); err != nil {
				return fmt.Errorf("drop function %s: %w", f.Name, err)
			}
		}
	}
	if len(victims) == 0 {
		return nil
	}
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	var keep []*catalog.Function
	for _, f := range s.eng.Catalog.UserFunctions() {
		gone := false
		for _, v := range victims {
			gone = gone || v.ID == f.ID
		}
		if !gone {
			keep = append(keep, f)
		}
	}
	return s.saveFunctions(ctx, keep)
}
