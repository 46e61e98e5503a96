package good

// This file is excluded for darwin; its error must not be reported.
var broken int = "linux only"
