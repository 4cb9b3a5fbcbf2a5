package expr

// Conjuncts splits e into the terms of its top-level ANDs (e itself when it
// is not an AND).
func Conjuncts(e Expr) []Expr {
	if call, ok := e.(*FuncExpr); ok && call.Name == "and" && len(call.Args) == 2 {
		return append(Conjuncts(call.Args[0]), Conjuncts(call.Args[1])...)
	}
	return []Expr{e}
}

// AndAll joins es with AND (nil when es is empty).
func AndAll(es []Expr) (Expr, error) {
	if len(es) == 0 {
		return nil, nil
	}
	out := es[0]
	for _, e := range es[1:] {
		c, err := Call("and", []Expr{out, e})
		if err != nil {
			return nil, err
		}
		out = c
	}
	return out, nil
}
