package jinja

// node is a statement of a parsed template.
type node interface{ nodeLine() int }

// expr is an expression of a parsed template.
type expr interface{ exprLine() int }

type pos struct{ line int }

func (p pos) nodeLine() int { return p.line }
func (p pos) exprLine() int { return p.line }

// Statements.
type (
	textNode struct {
		pos
		text string
	}
	outputNode struct {
		pos
		x expr
	}
	ifNode struct {
		pos
		conds  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		pos
		target    target
		iter      expr
		cond      expr // optional filter: for x in xs if cond
		body, els []node
		recursive bool
	}
	setNode struct {
		pos
		target target
		x      expr
	}
	setBlockNode struct {
		pos
		target  target
		filters []*filterExpr // applied to the captured text, in order
		body    []node
	}
	macroNode struct {
		pos
		m *macroDef
	}
	callBlockNode struct {
		pos
		call   *callExpr
		caller *macroDef // the body, callable as caller(...)
	}
	filterBlockNode struct {
		pos
		filters []*filterExpr
		body    []node
	}
	withNode struct {
		pos
		targets []target
		values  []expr
		body    []node
	}
	scopeNode struct { // {% generation %}: renders its body
		pos
		body []node
	}
	breakNode    struct{ pos }
	continueNode struct{ pos }
)

// macroDef is a macro's signature and body.
type macroDef struct {
	name     string
	params   []string
	defaults []expr // aligned with params; nil where there is none
	body     []node
}

// Assignment targets.
type (
	target     interface{ targetLine() int }
	nameTarget struct {
		pos
		name string
	}
	tupleTarget struct {
		pos
		items []target
	}
	nsTarget struct { // set ns.attr = ...
		pos
		name, attr string
	}
)

func (p pos) targetLine() int { return p.line }

// Expressions.
type (
	constExpr struct {
		pos
		v any
	}
	nameExpr struct {
		pos
		name string
	}
	listExpr struct {
		pos
		items []expr
		tuple bool
	}
	dictExpr struct {
		pos
		keys, vals []expr
	}
	getattrExpr struct {
		pos
		x    expr
		name string
	}
	getitemExpr struct {
		pos
		x, index expr
	}
	sliceExpr struct {
		pos
		x, lo, hi, step expr // nil where absent
	}
	callExpr struct {
		pos
		fn     expr
		args   []expr
		kwargs []kwarg
	}
	filterExpr struct {
		pos
		x      expr // nil in a filter block: the block's text
		name   string
		args   []expr
		kwargs []kwarg
	}
	testExpr struct {
		pos
		x      expr
		name   string
		args   []expr
		negate bool
	}
	unaryExpr struct {
		pos
		op string // "-", "+", "not"
		x  expr
	}
	binExpr struct {
		pos
		op   string // "+", "-", "*", "/", "//", "%", "**", "and", "or"
		l, r expr
	}
	compareExpr struct {
		pos
		first expr
		ops   []string // "==", "!=", "<", "<=", ">", ">=", "in", "notin"
		rest  []expr
	}
	concatExpr struct {
		pos
		parts []expr
	}
	condExpr struct {
		pos
		test, yes, no expr // no may be nil
	}
)

type kwarg struct {
	name string
	x    expr
}
