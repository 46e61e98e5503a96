package grammar

// Formats are ECMAScript patterns matched against the whole string. Each
// accepts only strings that the usual validators accept for the format
// (a subset where the format's definition is wider than a regular
// language, so that a generated value is always valid).
const (
	fmtYear     = `\d{4}`
	fmtLeapYear = `(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)`
	fmtMonthDay = `(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)`
	fmtDate     = `(?:` + fmtYear + `-` + fmtMonthDay + `|` + fmtLeapYear + `-02-29)`
	fmtTime     = `(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)`
	fmtOctet    = `(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`
	fmtIPv4     = fmtOctet + `(?:\.` + fmtOctet + `){3}`
	fmtH16      = `[0-9A-Fa-f]{1,4}`
	fmtLS32     = `(?:` + fmtH16 + `:` + fmtH16 + `|` + fmtIPv4 + `)`
	fmtIPv6     = `(?:(?:` + fmtH16 + `:){6}` + fmtLS32 +
		`|::(?:` + fmtH16 + `:){5}` + fmtLS32 +
		`|(?:` + fmtH16 + `)?::(?:` + fmtH16 + `:){4}` + fmtLS32 +
		`|(?:(?:` + fmtH16 + `:){0,1}` + fmtH16 + `)?::(?:` + fmtH16 + `:){3}` + fmtLS32 +
		`|(?:(?:` + fmtH16 + `:){0,2}` + fmtH16 + `)?::(?:` + fmtH16 + `:){2}` + fmtLS32 +
		`|(?:(?:` + fmtH16 + `:){0,3}` + fmtH16 + `)?::` + fmtH16 + `:` + fmtLS32 +
		`|(?:(?:` + fmtH16 + `:){0,4}` + fmtH16 + `)?::` + fmtLS32 +
		`|(?:(?:` + fmtH16 + `:){0,5}` + fmtH16 + `)?::` + fmtH16 +
		`|(?:(?:` + fmtH16 + `:){0,6}` + fmtH16 + `)?::)`
	fmtLabel    = `[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?`
	fmtHostname = `(?=.{1,253}$)` + fmtLabel + `(?:\.` + fmtLabel + `)*`
	fmtEmail    = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@" + fmtLabel + `(?:\.` + fmtLabel + `)*`
	// RFC 3986.
	fmtUnreserved = `[A-Za-z0-9._~-]`
	fmtPct        = `%[0-9A-Fa-f]{2}`
	fmtSubDelims  = `[!$&'()*+,;=]`
	fmtPchar      = `(?:` + fmtUnreserved + `|` + fmtPct + `|` + fmtSubDelims + `|[:@])`
	fmtSegment    = fmtPchar + `*`
	fmtSegmentNZ  = fmtPchar + `+`
	fmtSegNZNC    = `(?:` + fmtUnreserved + `|` + fmtPct + `|` + fmtSubDelims + `|@)+`
	fmtHost       = `(?:\[(?:` + fmtIPv6 + `|v[0-9A-Fa-f]+\.(?:` + fmtUnreserved + `|` + fmtSubDelims + `|:)+)\]|` + fmtIPv4 +
		`|(?:` + fmtUnreserved + `|` + fmtPct + `|` + fmtSubDelims + `)*)`
	fmtAuthority    = `(?:(?:` + fmtUnreserved + `|` + fmtPct + `|` + fmtSubDelims + `|:)*@)?` + fmtHost + `(?::\d*)?`
	fmtPathAbEmpty  = `(?:/` + fmtSegment + `)*`
	fmtPathAbsolute = `/(?:` + fmtSegmentNZ + `(?:/` + fmtSegment + `)*)?`
	fmtPathRootless = fmtSegmentNZ + `(?:/` + fmtSegment + `)*`
	fmtPathNoScheme = fmtSegNZNC + `(?:/` + fmtSegment + `)*`
	fmtQuery        = `(?:` + fmtPchar + `|[/?])*`
	fmtScheme       = `[A-Za-z][A-Za-z0-9+.-]*`
	fmtURI          = fmtScheme + `:(?://` + fmtAuthority + fmtPathAbEmpty + `|` + fmtPathAbsolute + `|` + fmtPathRootless + `|)` +
		`(?:\?` + fmtQuery + `)?(?:#` + fmtQuery + `)?`
	fmtRelativeRef = `(?://` + fmtAuthority + fmtPathAbEmpty + `|` + fmtPathAbsolute + `|` + fmtPathNoScheme + `|)` +
		`(?:\?` + fmtQuery + `)?(?:#` + fmtQuery + `)?`
	fmtDurTime = `T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)`
	fmtDurDate = `(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:` + fmtDurTime + `)?`
)

// stringFormats maps the formats the engine enforces to their patterns.
var stringFormats = map[string]string{
	"date":                  `^` + fmtDate + `$`,
	"time":                  `^` + fmtTime + `$`,
	"date-time":             `^` + fmtDate + `[Tt]` + fmtTime + `$`,
	"ipv4":                  `^` + fmtIPv4 + `$`,
	"ipv6":                  `^` + fmtIPv6 + `$`,
	"hostname":              `^` + fmtHostname + `$`,
	"idn-hostname":          `^` + fmtHostname + `$`,
	"email":                 `^` + fmtEmail + `$`,
	"idn-email":             `^` + fmtEmail + `$`,
	"uuid":                  `^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`,
	"uri":                   `^` + fmtURI + `$`,
	"iri":                   `^` + fmtURI + `$`,
	"uri-reference":         `^(?:` + fmtURI + `|` + fmtRelativeRef + `)$`,
	"iri-reference":         `^(?:` + fmtURI + `|` + fmtRelativeRef + `)$`,
	"json-pointer":          `^(?:/(?:[^~/]|~[01])*)*$`,
	"relative-json-pointer": `^(?:0|[1-9]\d*)(?:#|(?:/(?:[^~/]|~[01])*)*)$`,
	"duration":              `^P(?:` + fmtDurDate + `|` + fmtDurTime + `|\d+W)$`,
}

// unsupportedFormats are formats validators check that are not regular
// languages (or not ones written here): a schema using one does not
// compile.
var unsupportedFormats = map[string]bool{
	"regex": true, "uri-template": true,
}
