package parser

// ddlParser is our own recursive-descent grammar for the statements TiDB's
// parser does not cover.
type ddlParser struct {
	src string
	seq []*node
	i   int
}

func (p *ddlParser) statement() (Statement, error) {
	return nil, syntaxErrAt(p.src, p.seq[0].tok)
}
