package jinja

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// parser builds the statement tree from tokens with jinja2's grammar and
// operator precedence.
type parser struct {
	toks     []token
	i        int
	depth    int // nesting of expressions and blocks, bounded
	maxDepth int
}

// unsupportedTags are jinja2 statements this engine does not implement:
// they load other templates or change escaping, which chat templates
// never need.
var unsupportedTags = []string{"extends", "include", "import", "from", "block", "autoescape"}

func parse(toks []token, maxDepth int) ([]node, error) {
	p := &parser{toks: toks, maxDepth: maxDepth}
	body, end, err := p.body()
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errorf("unexpected '%s'", end)
	}
	return body, nil
}

func (p *parser) cur() token  { return p.toks[p.i] }
func (p *parser) peek() token { return p.toks[min(p.i+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) errorf(format string, args ...any) error {
	return &Error{Line: p.cur().line, Msg: fmt.Sprintf(format, args...)}
}

// isOp reports whether the current token is operator op.
func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.kind == tOp && t.val == op
}

// isName reports whether the current token is the name (keyword) n.
func (p *parser) isName(n string) bool {
	t := p.cur()
	return t.kind == tName && t.val == n
}

func (p *parser) skipOp(op string) bool {
	if p.isOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipName(n string) bool {
	if p.isName(n) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.skipOp(op) {
		return p.errorf("expected '%s', got %s", op, p.cur())
	}
	return nil
}

func (p *parser) expectKind(k tokKind, what string) (token, error) {
	if p.cur().kind != k {
		return token{}, p.errorf("expected %s, got %s", what, p.cur())
	}
	return p.next(), nil
}

func (p *parser) expectName() (string, error) {
	t, err := p.expectKind(tName, "a name")
	return t.val, err
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		return p.errorf("template nested more than %d levels deep", p.maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// body parses statements until a block tag whose name is one of ends (or
// the end of the template when ends is empty). It consumes "{%" and the
// name and returns the name; the caller parses the rest of that tag.
func (p *parser) body(ends ...string) ([]node, string, error) {
	if err := p.enter(); err != nil {
		return nil, "", err
	}
	defer p.leave()
	var out []node
	for {
		t := p.cur()
		switch t.kind {
		case tEOF:
			if len(ends) > 0 {
				return nil, "", p.errorf("unexpected end of template, expected '%s'", strings.Join(ends, "' or '"))
			}
			return out, "", nil
		case tText:
			p.next()
			out = append(out, &textNode{pos{t.line}, t.val})
		case tVarBegin:
			p.next()
			x, err := p.tuple(true, false)
			if err != nil {
				return nil, "", err
			}
			if _, err := p.expectKind(tVarEnd, "'}}'"); err != nil {
				return nil, "", err
			}
			out = append(out, &outputNode{pos{t.line}, x})
		case tBlockBegin:
			p.next()
			name := p.cur()
			if name.kind != tName {
				return nil, "", p.errorf("expected a statement name, got %s", name)
			}
			if slices.Contains(ends, name.val) {
				p.next()
				return out, name.val, nil
			}
			n, err := p.statement()
			if err != nil {
				return nil, "", err
			}
			out = append(out, n)
		default:
			return nil, "", p.errorf("unexpected %s", t)
		}
	}
}

// blockEnd expects the "%}" that closes a statement tag.
func (p *parser) blockEnd() error {
	_, err := p.expectKind(tBlockEnd, "'%}'")
	return err
}

// statement parses the statement whose name is the current token.
func (p *parser) statement() (node, error) {
	t := p.next()
	at := pos{t.line}
	switch t.val {
	case "if":
		return p.ifStmt(at)
	case "for":
		return p.forStmt(at)
	case "set":
		return p.setStmt(at)
	case "macro":
		return p.macroStmt(at)
	case "call":
		return p.callStmt(at)
	case "filter":
		filters, err := p.filterChain()
		if err != nil {
			return nil, err
		}
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		body, err := p.closedBody("endfilter")
		return &filterBlockNode{at, filters, body}, err
	case "with":
		return p.withStmt(at)
	case "generation":
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		body, err := p.closedBody("endgeneration")
		return &scopeNode{at, body}, err
	case "break", "continue":
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		if t.val == "break" {
			return &breakNode{at}, nil
		}
		return &continueNode{at}, nil
	}
	if strings.HasPrefix(t.val, "end") || t.val == "elif" || t.val == "else" {
		return nil, &Error{Line: t.line, Msg: fmt.Sprintf("unexpected '%s'", t.val)}
	}
	if slices.Contains(unsupportedTags, t.val) {
		return nil, &Error{Line: t.line, Msg: fmt.Sprintf("unsupported template feature: the '%s' tag", t.val)}
	}
	return nil, &Error{Line: t.line, Msg: fmt.Sprintf("unknown tag '%s'", t.val)}
}

// closedBody parses a body up to {% end %} and its "%}".
func (p *parser) closedBody(end string) ([]node, error) {
	body, _, err := p.body(end)
	if err != nil {
		return nil, err
	}
	return body, p.blockEnd()
}

func (p *parser) ifStmt(at pos) (node, error) {
	n := &ifNode{pos: at}
	for {
		cond, err := p.tuple(false, false)
		if err != nil {
			return nil, err
		}
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		body, end, err := p.body("elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		n.bodies = append(n.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.blockEnd(); err != nil {
				return nil, err
			}
			n.els, err = p.closedBody("endif")
			return n, err
		}
		return n, p.blockEnd()
	}
}

func (p *parser) forStmt(at pos) (node, error) {
	tgt, err := p.assignTarget(false)
	if err != nil {
		return nil, err
	}
	if !p.skipName("in") {
		return nil, p.errorf("expected 'in', got %s", p.cur())
	}
	iter, err := p.tuple(false, false, "recursive")
	if err != nil {
		return nil, err
	}
	n := &forNode{pos: at, target: tgt, iter: iter}
	if p.skipName("if") {
		if n.cond, err = p.expression(true); err != nil {
			return nil, err
		}
	}
	n.recursive = p.skipName("recursive")
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	body, end, err := p.body("endfor", "else")
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.blockEnd(); err != nil {
			return nil, err
		}
		n.els, err = p.closedBody("endfor")
		return n, err
	}
	return n, p.blockEnd()
}

func (p *parser) setStmt(at pos) (node, error) {
	tgt, err := p.assignTarget(true)
	if err != nil {
		return nil, err
	}
	if p.skipOp("=") {
		x, err := p.tuple(true, false)
		if err != nil {
			return nil, err
		}
		return &setNode{at, tgt, x}, p.blockEnd()
	}
	var filters []*filterExpr
	if p.isOp("|") {
		p.next()
		if filters, err = p.filterChain(); err != nil {
			return nil, err
		}
	}
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	body, err := p.closedBody("endset")
	return &setBlockNode{at, tgt, filters, body}, err
}

// assignTarget parses the target of set, for or with: a name, names
// separated by commas (optionally in parentheses), or ns.attr when
// withNamespace is set.
func (p *parser) assignTarget(withNamespace bool) (target, error) {
	at := pos{p.cur().line}
	if withNamespace && p.cur().kind == tName && p.peek().kind == tOp && p.peek().val == "." {
		name := p.next().val
		p.next()
		attr, err := p.expectName()
		return &nsTarget{at, name, attr}, err
	}
	paren := p.skipOp("(")
	var items []target
	for {
		if p.isOp("(") {
			t, err := p.assignTarget(false)
			if err != nil {
				return nil, err
			}
			items = append(items, t)
		} else {
			name, err := p.expectName()
			if err != nil {
				return nil, err
			}
			if name == "in" || name == "true" || name == "false" || name == "none" {
				return nil, p.errorf("cannot assign to '%s'", name)
			}
			items = append(items, &nameTarget{at, name})
		}
		if !p.skipOp(",") {
			break
		}
		if p.isName("in") || p.isOp("=") || p.isOp(")") {
			break
		}
	}
	if paren {
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if len(items) == 1 && !paren {
		return items[0], nil
	}
	return &tupleTarget{at, items}, nil
}

func (p *parser) macroStmt(at pos) (node, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	m := &macroDef{name: name}
	if err := p.signature(m); err != nil {
		return nil, err
	}
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	m.body, err = p.closedBody("endmacro")
	return &macroNode{at, m}, err
}

// signature parses "(a, b=default, ...)" into m.
func (p *parser) signature(m *macroDef) error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	for !p.isOp(")") {
		if len(m.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return err
			}
			if p.isOp(")") {
				break
			}
		}
		name, err := p.expectName()
		if err != nil {
			return err
		}
		var def expr
		if p.skipOp("=") {
			if def, err = p.expression(true); err != nil {
				return err
			}
		} else if len(m.defaults) > 0 && m.defaults[len(m.defaults)-1] != nil {
			return p.errorf("non-default argument '%s' follows default argument", name)
		}
		m.params = append(m.params, name)
		m.defaults = append(m.defaults, def)
	}
	p.next()
	return nil
}

func (p *parser) callStmt(at pos) (node, error) {
	caller := &macroDef{name: "caller"}
	if p.isOp("(") {
		if err := p.signature(caller); err != nil {
			return nil, err
		}
	}
	x, err := p.expression(true)
	if err != nil {
		return nil, err
	}
	call, ok := x.(*callExpr)
	if !ok {
		return nil, p.errorf("expected a call in a call block")
	}
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	caller.body, err = p.closedBody("endcall")
	return &callBlockNode{at, call, caller}, err
}

func (p *parser) withStmt(at pos) (node, error) {
	n := &withNode{pos: at}
	for p.cur().kind != tBlockEnd {
		if len(n.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		t, err := p.assignTarget(false)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		x, err := p.expression(true)
		if err != nil {
			return nil, err
		}
		n.targets = append(n.targets, t)
		n.values = append(n.values, x)
	}
	if err := p.blockEnd(); err != nil {
		return nil, err
	}
	var err error
	n.body, err = p.closedBody("endwith")
	return n, err
}

// filterChain parses "name(args) | name ..." (the filters of a filter or
// set block) with no input expression.
func (p *parser) filterChain() ([]*filterExpr, error) {
	var out []*filterExpr
	for {
		f, err := p.filter(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		if !p.skipOp("|") {
			return out, nil
		}
	}
}

// tuple parses expressions separated by commas; more than one (or a
// trailing comma) makes a tuple. With condexpr false the items are parsed
// without "x if y else z" (where "if" means something else). Names in
// stop end the tuple.
func (p *parser) tuple(condexpr, explicitParens bool, stop ...string) (expr, error) {
	at := pos{p.cur().line}
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if !p.skipOp(",") {
				break
			}
			isTuple = true
		}
		if p.tupleEnds(stop) {
			break
		}
		x, err := p.expression(condexpr)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	if !isTuple {
		if len(items) == 0 {
			if explicitParens {
				return &listExpr{pos: at, tuple: true}, nil
			}
			return nil, p.errorf("expected an expression, got %s", p.cur())
		}
		return items[0], nil
	}
	return &listExpr{pos: at, items: items, tuple: true}, nil
}

func (p *parser) tupleEnds(stop []string) bool {
	t := p.cur()
	switch t.kind {
	case tVarEnd, tBlockEnd, tEOF:
		return true
	case tOp:
		return t.val == ")"
	case tName:
		return slices.Contains(stop, t.val)
	}
	return false
}

// expression parses one expression, including "a if b else c" when
// condexpr is set.
func (p *parser) expression(condexpr bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.or()
	if err != nil || !condexpr {
		return x, err
	}
	for p.isName("if") {
		at := pos{p.next().line}
		test, err := p.or()
		if err != nil {
			return nil, err
		}
		var no expr
		if p.skipName("else") {
			if no, err = p.expression(true); err != nil {
				return nil, err
			}
		}
		x = &condExpr{at, test, x, no}
	}
	return x, nil
}

func (p *parser) or() (expr, error) {
	x, err := p.and()
	for err == nil && p.isName("or") {
		at := pos{p.next().line}
		var r expr
		if r, err = p.and(); err == nil {
			x = &binExpr{at, "or", x, r}
		}
	}
	return x, err
}

func (p *parser) and() (expr, error) {
	x, err := p.not()
	for err == nil && p.isName("and") {
		at := pos{p.next().line}
		var r expr
		if r, err = p.not(); err == nil {
			x = &binExpr{at, "and", x, r}
		}
	}
	return x, err
}

func (p *parser) not() (expr, error) {
	if p.isName("not") {
		at := pos{p.next().line}
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.not()
		return &unaryExpr{at, "not", x}, err
	}
	return p.compare()
}

func (p *parser) compare() (expr, error) {
	at := pos{p.cur().line}
	x, err := p.math1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{pos: at, first: x}
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			op = t.val
			p.next()
		case p.isName("in"):
			op = "in"
			p.next()
		case p.isName("not") && p.peek().kind == tName && p.peek().val == "in":
			op = "notin"
			p.next()
			p.next()
		default:
			if len(c.ops) == 0 {
				return x, nil
			}
			return c, nil
		}
		r, err := p.math1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, r)
	}
}

// binary parses a left-associative chain of ops over sub.
func (p *parser) binary(sub func() (expr, error), ops ...string) (expr, error) {
	x, err := sub()
	for err == nil && p.cur().kind == tOp && slices.Contains(ops, p.cur().val) {
		t := p.next()
		var r expr
		if r, err = sub(); err == nil {
			x = &binExpr{pos{t.line}, t.val, x, r}
		}
	}
	return x, err
}

func (p *parser) math1() (expr, error) { return p.binary(p.concat, "+", "-") }

func (p *parser) concat() (expr, error) {
	at := pos{p.cur().line}
	x, err := p.math2()
	if err != nil || !p.isOp("~") {
		return x, err
	}
	parts := []expr{x}
	for p.skipOp("~") {
		r, err := p.math2()
		if err != nil {
			return nil, err
		}
		parts = append(parts, r)
	}
	return &concatExpr{at, parts}, nil
}

func (p *parser) math2() (expr, error) { return p.binary(p.pow, "*", "/", "//", "%") }

func (p *parser) pow() (expr, error) {
	return p.binary(func() (expr, error) { return p.unary(true) }, "**")
}

func (p *parser) unary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	var x expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		var inner expr
		if inner, err = p.unary(false); err != nil {
			return nil, err
		}
		x = &unaryExpr{pos{t.line}, t.val, inner}
	} else if x, err = p.primary(); err != nil {
		return nil, err
	}
	if x, err = p.postfix(x); err != nil || !withFilter {
		return x, err
	}
	return p.filterExpr(x)
}

func (p *parser) primary() (expr, error) {
	t := p.cur()
	at := pos{t.line}
	switch t.kind {
	case tName:
		p.next()
		switch t.val {
		case "true", "True":
			return &constExpr{at, true}, nil
		case "false", "False":
			return &constExpr{at, false}, nil
		case "none", "None":
			return &constExpr{at, nil}, nil
		}
		return &nameExpr{at, t.val}, nil
	case tString:
		s := p.next().val
		for p.cur().kind == tString {
			s += p.next().val
		}
		return &constExpr{at, s}, nil
	case tInt:
		p.next()
		v, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return nil, &Error{Line: t.line, Msg: fmt.Sprintf("integer literal %s out of range", t.val)}
		}
		return &constExpr{at, v}, nil
	case tFloat:
		p.next()
		v, err := strconv.ParseFloat(t.val, 64)
		if err != nil {
			return nil, &Error{Line: t.line, Msg: fmt.Sprintf("bad float literal %s", t.val)}
		}
		return &constExpr{at, v}, nil
	case tOp:
		switch t.val {
		case "(":
			p.next()
			x, err := p.tuple(true, true)
			if err != nil {
				return nil, err
			}
			return x, p.expectOp(")")
		case "[":
			p.next()
			l := &listExpr{pos: at}
			for !p.isOp("]") {
				if len(l.items) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("]") {
						break
					}
				}
				x, err := p.expression(true)
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, x)
			}
			p.next()
			return l, nil
		case "{":
			p.next()
			d := &dictExpr{pos: at}
			for !p.isOp("}") {
				if len(d.keys) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("}") {
						break
					}
				}
				k, err := p.expression(true)
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.expression(true)
				if err != nil {
					return nil, err
				}
				d.keys = append(d.keys, k)
				d.vals = append(d.vals, v)
			}
			p.next()
			return d, nil
		}
	}
	return nil, p.errorf("unexpected %s", t)
}

// postfix parses attribute access, subscripts and calls after x.
func (p *parser) postfix(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp(".") || p.isOp("["):
			x, err = p.subscript(x)
		case p.isOp("("):
			x, err = p.call(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// filterExpr parses filters, tests and calls after x.
func (p *parser) filterExpr(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			p.next()
			x, err = p.filter(x)
		case p.isName("is"):
			x, err = p.test(x)
		case p.isOp("("):
			x, err = p.call(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) subscript(x expr) (expr, error) {
	t := p.next()
	at := pos{t.line}
	if t.val == "." {
		a := p.next()
		switch a.kind {
		case tName:
			return &getattrExpr{at, x, a.val}, nil
		case tInt:
			v, err := strconv.ParseInt(a.val, 10, 64)
			if err != nil {
				return nil, p.errorf("bad index %s", a.val)
			}
			return &getitemExpr{at, x, &constExpr{at, v}}, nil
		}
		return nil, &Error{Line: a.line, Msg: fmt.Sprintf("expected a name after '.', got %s", a)}
	}
	var items []expr
	for !p.isOp("]") {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("]") {
				break
			}
		}
		it, err := p.subscribed(x)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	p.next()
	switch len(items) {
	case 0:
		return nil, p.errorf("empty subscript")
	case 1:
		if s, ok := items[0].(*sliceExpr); ok {
			return s, nil
		}
		return &getitemExpr{at, x, items[0]}, nil
	}
	return &getitemExpr{at, x, &listExpr{pos: at, items: items, tuple: true}}, nil
}

// subscribed parses one item of a subscript: an expression or a slice
// lo:hi:step of x.
func (p *parser) subscribed(x expr) (expr, error) {
	at := pos{p.cur().line}
	var lo expr
	if !p.isOp(":") {
		var err error
		if lo, err = p.expression(true); err != nil || !p.isOp(":") {
			return lo, err
		}
	}
	p.next()
	s := &sliceExpr{pos: at, x: x, lo: lo}
	var err error
	if !p.isOp("]") && !p.isOp(",") && !p.isOp(":") {
		if s.hi, err = p.expression(true); err != nil {
			return nil, err
		}
	}
	if p.skipOp(":") && !p.isOp("]") && !p.isOp(",") {
		if s.step, err = p.expression(true); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// args parses "(positional, name=keyword, ...)".
func (p *parser) args() ([]expr, []kwarg, error) {
	if err := p.expectOp("("); err != nil {
		return nil, nil, err
	}
	var args []expr
	var kwargs []kwarg
	for !p.isOp(")") {
		if len(args)+len(kwargs) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		if p.isOp("*") || p.isOp("**") {
			return nil, nil, p.errorf("unsupported template feature: *args and **kwargs in calls")
		}
		if p.cur().kind == tName && p.peek().kind == tOp && p.peek().val == "=" {
			name := p.next().val
			p.next()
			x, err := p.expression(true)
			if err != nil {
				return nil, nil, err
			}
			kwargs = append(kwargs, kwarg{name, x})
			continue
		}
		if len(kwargs) > 0 {
			return nil, nil, p.errorf("positional argument after keyword argument")
		}
		x, err := p.expression(true)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, x)
	}
	p.next()
	return args, kwargs, nil
}

func (p *parser) call(fn expr) (expr, error) {
	at := pos{p.cur().line}
	args, kwargs, err := p.args()
	if err != nil {
		return nil, err
	}
	return &callExpr{at, fn, args, kwargs}, nil
}

// dottedName parses a filter or test name, which may contain dots.
func (p *parser) dottedName() (string, error) {
	name, err := p.expectName()
	for err == nil && p.isOp(".") && p.peek().kind == tName {
		p.next()
		name += "." + p.next().val
	}
	return name, err
}

func (p *parser) filter(x expr) (*filterExpr, error) {
	at := pos{p.cur().line}
	name, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	f := &filterExpr{pos: at, x: x, name: name}
	if p.isOp("(") {
		if f.args, f.kwargs, err = p.args(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) test(x expr) (expr, error) {
	at := pos{p.next().line} // "is"
	negate := p.skipName("not")
	name, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	t := &testExpr{pos: at, x: x, name: name, negate: negate}
	c := p.cur()
	switch {
	case p.isOp("("):
		var kwargs []kwarg
		if t.args, kwargs, err = p.args(); err != nil {
			return nil, err
		}
		if len(kwargs) > 0 {
			return nil, p.errorf("test '%s' takes no keyword arguments", name)
		}
	case (c.kind == tName || c.kind == tString || c.kind == tInt || c.kind == tFloat || p.isOp("[") || p.isOp("{")) &&
		!p.isName("else") && !p.isName("or") && !p.isName("and"):
		if p.isName("is") {
			return nil, p.errorf("cannot chain multiple tests with 'is'")
		}
		arg, err := p.primary()
		if err != nil {
			return nil, err
		}
		if arg, err = p.postfix(arg); err != nil {
			return nil, err
		}
		t.args = []expr{arg}
	}
	return t, nil
}
