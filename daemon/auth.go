package daemon

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// TokenBytes is the number of random bytes in the TCP listener's token
// (written as hex). A token file holding fewer is replaced.
const TokenBytes = 32

// loadToken returns the bearer token kept in path, creating it when it is
// missing. A token file that others could read (any group or other
// permission bit), that another user owns, that is not a regular file, or
// that holds fewer than TokenBytes bytes of hex is not trusted: it is
// replaced by a new random token (mode 0600) and the replacement logged.
func loadToken(path string, log *slog.Logger) (string, error) {
	if tok, why := readToken(path); why == nil {
		return tok, nil
	} else if !errors.Is(why, os.ErrNotExist) {
		log.Warn("replacing the TCP token file", "path", path, "reason", why.Error())
	}
	raw := make([]byte, TokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	tok := hex.EncodeToString(raw)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write token: %w", err)
	}
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	// Rename replaces whatever was at path (a symlink included) without
	// following it.
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	return tok, nil
}

// tokenError says why a token file is not trusted.
type tokenError string

func (e tokenError) Error() string { return string(e) }

// readToken returns the token in path, or why it cannot be used
// (os.ErrNotExist when there is no file).
func readToken(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", os.ErrNotExist
		}
		return "", tokenError(err.Error())
	}
	if !st.Mode().IsRegular() {
		return "", tokenError(fmt.Sprintf("not a regular file (%v)", st.Mode().Type()))
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", tokenError(fmt.Sprintf("mode %v lets other users read it", st.Mode().Perm()))
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return "", tokenError(fmt.Sprintf("owned by uid %d", sys.Uid))
	}
	if st.Size() > 4096 {
		return "", tokenError("larger than 4 KiB")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", tokenError(err.Error())
	}
	tok := strings.TrimSpace(string(b))
	raw, err := hex.DecodeString(tok)
	if err != nil || len(raw) < TokenBytes {
		return "", tokenError(fmt.Sprintf("not %d or more random bytes in hex", TokenBytes))
	}
	return tok, nil
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header, and whether the header had that form. Any other scheme, or a
// bare token, is no token.
func bearerToken(h http.Header) (string, bool) {
	v := h.Get("Authorization")
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// tokenOK reports whether the request carries the token, in constant
// time: "Authorization: Bearer <token>", or "x-api-key: <token>" as
// Anthropic's clients send it.
func (s *Server) tokenOK(r *http.Request) bool {
	if s.token == "" {
		return false
	}
	if got, ok := bearerToken(r.Header); ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1 {
		return true
	}
	got := strings.TrimSpace(r.Header.Get("X-Api-Key"))
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}
