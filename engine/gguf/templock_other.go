//go:build !unix

package gguf

import "os"

// lockTemp does nothing where flock is unavailable.
func lockTemp(*os.File) error { return nil }

// abandoned reports false where a live writer cannot be told from a dead
// one: no temporary file is removed.
func abandoned(string) bool { return false }
