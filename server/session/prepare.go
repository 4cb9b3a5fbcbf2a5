package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// prepareSQL runs PREPARE name [(types)] AS statement: the statement is bound
// now (its errors are PREPARE's, as in PostgreSQL) and kept for EXECUTE
// until DEALLOCATE or the session's end.
func (s *Session) prepareSQL(ctx context.Context, n *parser.Prepare) (pgwire.Result, error) {
	if _, ok := s.prepared[n.Name]; ok {
		return nil, types.Errorf(types.ErrDuplicatePrepared, "prepared statement \"%s\" already exists", n.Name)
	}
	declared := make([]types.T, len(n.Types))
	for i, tn := range n.Types {
		t, err := types.FromName(tn.Name, tn.Args)
		if err != nil {
			return nil, err
		}
		declared[i] = t
	}
	st := &statement{s: s, ast: n.Statement, sql: n.Body, declared: declared}
	if _, _, err := st.Describe(ctx); err != nil {
		return nil, err
	}
	if s.prepared == nil {
		s.prepared = map[string]*statement{}
	}
	s.prepared[n.Name] = st
	return tagOnly("PREPARE"), nil
}

// executeSQL runs EXECUTE name (args): each argument is evaluated as an
// expression and cast to its parameter's type, then the statement runs with
// them.
func (s *Session) executeSQL(ctx context.Context, st *statement, n *parser.Execute) (pgwire.Result, error) {
	params, _, err := st.Describe(ctx)
	if err != nil {
		return nil, err
	}
	if len(n.Args) != len(params) {
		return nil, &types.Error{Kind: types.ErrSyntax, Msg: fmt.Sprintf("wrong number of parameters for prepared statement \"%s\"", n.Name),
			Detail: fmt.Sprintf("Expected %d parameters but got %d.", len(params), len(n.Args))}
	}
	if len(params) == 0 {
		return st.Run(ctx, nil)
	}
	exprs := make([]string, len(params))
	for i, a := range n.Args {
		exprs[i] = "(" + a + ")::" + params[i].SQLName()
	}
	sts, err := s.Parse(ctx, "SELECT "+strings.Join(exprs, ", "), nil)
	if err != nil {
		return nil, err
	}
	if len(sts) != 1 {
		return nil, types.Errorf(types.ErrSyntax, "EXECUTE %s: bad parameter list", n.Name)
	}
	res, err := sts[0].Run(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	c, err := res.Next(ctx)
	if errors.Is(err, io.EOF) || (err == nil && c.Len() != 1) {
		return nil, types.Errorf(types.ErrInternal, "EXECUTE %s: parameters gave no row", n.Name)
	}
	if err != nil {
		return nil, err
	}
	values := c.Row(0, nil)
	for i := range values {
		values[i] = values[i].Copy()
	}
	return st.Run(ctx, values)
}
