"""Makes cases.json: small templates and what jinja2, configured as Hugging Face does, renders for them.
usage: python3 gen_cases.py (needs python3-jinja2); writes cases.json beside it."""
import json
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols, Extension
from jinja2 import nodes

class GenerationTag(Extension):
    tags = {"generation"}
    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.Scope(body, lineno=lineno)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, GenerationTag])
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
env.filters["tojson"] = tojson
cases = [
 ("whitespace", "a  {%- if true %}\n  b\n  {%- endif %}  \n{{- ' c ' -}}\n  d\n"),
 ("lstrip_trim", "x\n    {% if true %}\n    y\n    {% endif %}\n{# comment #}\nz"),
 ("plus_keeps", "x\n    {%+ if true +%}\ny{% endif %}"),
 ("trailing_newline", "a\n"),
 ("crlf", "a\r\nb\rc"),
 ("raw", "{% raw %}{{ x }}{% endraw %}"),
 ("loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}"),
 ("loop_else", "{% for x in [] %}x{% else %}empty{% endfor %}"),
 ("loop_filter", "{% for x in range(10) if x is odd %}{{ x }}{{ '' if loop.last else ',' }}{% endfor %}"),
 ("loop_controls", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
 ("loop_scope", "{% set c = 0 %}{% for i in range(3) %}{% set c = c + 1 %}{{ c }}{% endfor %}{{ c }}"),
 ("loop_unpack", "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }} {% endfor %}"),
 ("loop_cycle_changed", "{% for x in [1,1,2] %}{{ loop.cycle('a','b') }}{{ loop.changed(x) }}{% endfor %}"),
 ("loop_recursive", "{% for n in tree recursive %}[{{ n.name }}{% if n.kids %}{{ loop(n.kids) }}{% endif %}:{{ loop.depth }}]{% endfor %}"),
 ("namespace", "{% set ns = namespace(n=0, s='') %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
 ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}"),
 ("set_block", "{% set x | upper %}hello {{ 'w' }}{% endset %}[{{ x }}]"),
 ("filter_block", "{% filter trim | upper %}  padded  {% endfilter %}|"),
 ("with", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}"),
 ("macro", "{% macro m(a, b=2) %}[{{ a }},{{ b }},{{ varargs }},{{ kwargs }}]{% endmacro %}{{ m(1) }}{{ m(1, b=3) }}{{ m(1, 2, 3, z=4) }}"),
 ("macro_caller", "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner{% endcall %}"),
 ("macro_recursion", "{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"),
 ("repr", "{{ [1, 'a', \"it's\", none, true, 1.5, {'k': [1]}] }}|{{ (1,) }}|{{ () }}|{{ {} }}"),
 ("floats", "{{ 1.0 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 1e-5 }} {{ 0.0001 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ 10/2 }} {{ -0.0 }} {{ 2.5e-10 }}"),
 ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ true + 1 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 3 - 5 }}"),
 ("compare", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' in 'cat' }} {{ 2 not in [1] }} {{ 'k' in {'k': 1} }} {{ none == none }}"),
 ("logic", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }} {{ not 0 }} {{ none or [] }}"),
 ("condexpr", "{{ 'a' if true else 'b' }}{{ 'c' if false }}|{{ 1 if 0 else 2 if 0 else 3 }}"),
 ("concat", "{{ 1 ~ 'a' ~ none ~ [1] ~ undefined_name }}"),
 ("strings", "{{ '  x y  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ ' a '.lstrip() }}|{{ ' a '.rstrip() }}|{{ 'a b  c'.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ ' a  b '.split(none, 1) }}"),
 ("strings2", "{{ 'Hello'.startswith('He') }}{{ 'Hello'.endswith(('x', 'lo')) }}{{ 'aaa'.replace('a', 'b', 2) }}{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ 'hello world'.title() }}{{ 'hELLO'.capitalize() }}{{ 'abcabc'.find('c') }}{{ 'abcabc'.rfind('c') }}{{ 'abcabc'.count('b') }}{{ '-'.join(['a', 'b']) }}{{ 'l1\\nl2\\r\\nl3'.splitlines() }}"),
 ("strings3", "{{ '日本語'[1] }}{{ '日本語'[-1:] }}{{ '日本語'|length }}{{ 'abcdef'[1:5:2] }}{{ 'abc'[::-1] }}{{ [1,2,3,4][1:] }}{{ [1,2,3,4][-2:] }}{{ [1,2,3][::-1] }}"),
 ("format_method", "{{ '{}-{}'.format(1, 'b') }}|{{ '{1}{0}'.format('a', 'b') }}|{{ '{x}!'.format(x=5) }}|{{ '{:>5}|{:<4}|{:^5}'.format('a', 'b', 'c') }}|{{ '{:.2f}'.format(3.14159) }}|{{ '{{}}'.format() }}|{{ '{:05d}'.format(42) }}"),
 ("percent", "{{ '%s and %d' % ('a', 3) }}|{{ '%5.1f%%' % 12.345 }}|{{ '%(a)s' % {'a': 1} }}|{{ '%r' % 'x' }}|{{ '%-4s|' % 'a' }}"),
 ("escapes", "{{ 'a\\tb\\n\\x41\\u00e9\\\\' }}|{{ \"q'\" }}|{{ 'unknown \\d escape' }}"),
 ("markup", "{{ 'x'|safe + '<' }}|{{ '<' + 'x'|safe }}|{{ ('<'|safe) ~ '<' }}|{{ '<a>'|e }}|{{ ('<b>'|safe + '&')|trim }}|{{ '\"'|escape }}"),
 ("tojson", "{{ {'b': 1, 'a': [1, 2.5, none, true, 'é\"\\n']}|tojson }}|{{ {'b': {'c': []}, 'a': {}}|tojson(indent=2) }}|{{ [1, 2]|tojson(separators=(',', ':')) }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|{{ 'é'|tojson(ensure_ascii=true) }}|{{ '😀'|tojson(ensure_ascii=true) }}"),
 ("tojson_order", "{{ d|tojson }}"),
 ("filters1", "{{ [3, 1, 2]|sort }}{{ ['b', 'A', 'a']|sort }}{{ ['b', 'A', 'a']|sort(case_sensitive=true) }}{{ [3, 1]|sort(reverse=true) }}{{ users|sort(attribute='age')|map(attribute='name')|list }}"),
 ("filters2", "{{ {'b': 1, 'A': 2}|dictsort }}{{ {'b': 1, 'a': 2}|dictsort(by='value') }}{{ ['a', 'A', 'b']|unique|list }}{{ [1, 2, 3]|first }}{{ [1, 2, 3]|last }}{{ [3, 1, 2]|min }}{{ [3, 1, 2]|max }}{{ [1, 2]|sum }}{{ users|sum(attribute='age') }}"),
 ("filters3", "{{ [1, 2]|join(',') }}|{{ users|join(', ', attribute='name') }}|{{ 'abc'|list }}|{{ 'abc'|reverse }}|{{ [1, 2]|reverse|list }}|{{ 'x'|center(5) }}|{{ 'hello world'|title }}|{{ 'hello'|capitalize }}|{{ 'a b c'|wordcount }}"),
 ("filters4", "{{ '12'|int + 1 }}|{{ '3.7'|int }}|{{ 'x'|int(5) }}|{{ 'ff'|int(base=16) }}|{{ '2.5'|float }}|{{ 'x'|float }}|{{ 2.567|round(2) }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.1|round(method='ceil') }}|{{ -3|abs }}"),
 ("filters5", "{{ undefined_x|default('d') }}|{{ ''|default('e', true) }}|{{ none|default('n') }}|{{ undefined_x|length }}|{{ 'aXbX'|replace('X', '-') }}|{{ '  t  '|trim }}|{{ 'xxtxx'|trim('x') }}|{{ {'a': 1}|items|list }}|{{ users|map(attribute='name')|join('/') }}|{{ [1, 2]|map('string')|list }}"),
 ("select", "{{ [1, 2, 3, 4]|select('odd')|list }}{{ [1, 2, 3]|reject('equalto', 2)|list }}{{ users|selectattr('age', 'gt', 25)|map(attribute='name')|list }}{{ users|rejectattr('admin')|map(attribute='name')|list }}{{ [0, 1, '', 'a']|select|list }}{{ none|selectattr('x')|list }}"),
 ("indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, first=true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'a\\nb'|indent('> ') }}"),
 ("truncate", "{{ 'hello world foo bar'|truncate(9) }}|{{ 'hello world foo bar'|truncate(9, true) }}|{{ 'short'|truncate(9) }}"),
 ("tests", "{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is boolean }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is iterable }}{{ 1 is iterable }}{{ none is none }}{{ x is defined }}{{ x is undefined }}{{ 4 is divisibleby 2 }}{{ 3 is even }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ 2 is in [1, 2] }}{{ 1 is eq 1 }}{{ 2 is gt 1 }}{{ x is not defined }}{{ range is callable }}{{ true is sameas true }}"),
 ("undefined", "[{{ x }}]{{ x is iterable }}{{ x is sequence }}{{ x|length }}{% for i in x %}no{% endfor %}{{ x|string }}{{ x|trim }}{{ x|upper }}{{ x|list }}{{ x|join(',') }}{{ d.missing }}{{ d['missing'] }}{{ n.attr }}"),
 ("dict_methods", "{{ d.get('b') }}{{ d.get('zz', 'def') }}{{ d.get('zz') }}{{ d.keys()|list }}{{ d.values()|list }}{{ d.items is callable }}"),
 ("dict_attr_vs_item", "{{ {'items': 5}['items'] }}|{{ {'x': 1}.x }}|{{ {'a': {'b': 2}}.a.b }}|{{ [[1, 2]][0][1] }}|{{ [5, 6].1 }}"),
 ("strftime", "{{ strftime_now('%Y-%m-%d %H:%M %b %B %a %A %d %j %p %I %y %-d %%') }}"),
 ("raise", "{% if true %}{{ raise_exception('boom ' ~ 1) }}{% endif %}"),
 ("is_test_arg", "{{ 1 is divisibleby(1) }}{{ 'a' is in 'abc' }}"),
 ("nested_data", "{% for m in msgs %}{{ m.role }}:{{ m['content'] }}{% if m.tool_calls %}{% for c in m.tool_calls %}({{ c.function.name }} {{ c.function.arguments|tojson }}){% endfor %}{% endif %};{% endfor %}"),
 ("list_methods", "{% set l = [3, 1] %}{{ l.index(1) }}{{ l.count(3) }}"),
 ("range", "{{ range(3)|list }}{{ range(1, 7, 2)|list }}{{ range(5, 0, -2)|list }}{{ range(0)|list }}"),
 ("string_cmp_ops", "{{ 'b' > 'a' }}{{ 'B' < 'a' }}{{ 'abc' != 'abd' }}"),
 ("adjacent_strings", "{{ 'a' 'b' \"c\" }}"),
 ("generation", "{% generation %}gen {{ 1 }}{% endgeneration %}"),
 ("ns_in_macro", "{% set ns = namespace(found=false) %}{% macro look(items) %}{% for i in items %}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{% endmacro %}{{ look([1, 2]) }}{{ ns.found }}"),
 ("comment_strip", "a {#- c -#} b\n  {#- c2 #}\n  c"),
 ("var_strip", "a\n  {{- 'b' -}}\n  c"),
 ("number_literals", "{{ 1_000 }} {{ 1.5e3 }} {{ 0.5 }} {{ 12 }}"),
]
data = {"users": [{"name": "ann", "age": 30, "admin": True}, {"name": "bob", "age": 20, "admin": False}],
        "tree": [{"name": "a", "kids": [{"name": "b", "kids": []}]}, {"name": "c"}],
        "d": {"z": 1, "b": 2, "a": {"y": [1, {"k": "v"}], "x": None}}, "n": None,
        "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"q": 1, "a": "b"}}}]}]}
from datetime import datetime
env.globals["strftime_now"] = lambda f: datetime(2026, 1, 15, 9, 30).strftime(f)
class TE(Exception): pass
def rx(m): raise TE(m)
env.globals["raise_exception"] = rx
out = []
for name, src in cases:
    try:
        out.append({"name": name, "src": src, "out": env.from_string(src).render(**data)})
    except TE as e:
        out.append({"name": name, "src": src, "raises": str(e)})
    except Exception as e:
        out.append({"name": name, "src": src, "error": f"{type(e).__name__}: {e}"})
json.dump({"data": data, "cases": out}, open("cases.json", "w"), indent=1, ensure_ascii=False)
for c in out:
    if "error" in c: print(c["name"], c["error"])
