// Package build holds the desktop app's packaging files (icons,
// darwin/Info.plist, linux/ruvllm.desktop); its tests check that they are
// well-formed and agree with each other and with the app packages' defaults.
package build

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"howett.net/plist"
)

// The names the packaging files must agree on: the app's executable, and the
// icon and desktop-entry names that app/notify and app/tray default to.
const (
	executable = "ruvllm-app"
	iconName   = "ruvllm"
)

func TestInfoPlist(t *testing.T) {
	data, err := os.ReadFile("darwin/Info.plist")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	format, err := plist.Unmarshal(data, &doc)
	if err != nil {
		t.Fatalf("parse Info.plist: %v", err)
	}
	if format != plist.XMLFormat {
		t.Errorf("Info.plist format %d, want XML", format)
	}
	want := map[string]any{
		"CFBundlePackageType":           "APPL",
		"CFBundleInfoDictionaryVersion": "6.0",
		"CFBundleName":                  "ruvllm",
		"CFBundleIdentifier":            "dev.ruvllm.app",
		"CFBundleExecutable":            executable,
		// Menu-bar mode: no Dock icon and no menu bar until the app asks
		// for them (app/menubar SetDockIconVisible). A string "true" here
		// would be ignored by Launch Services, hence the type check.
		"LSUIElement":             true,
		"NSHighResolutionCapable": true,
	}
	for k, v := range want {
		if got, ok := doc[k]; !ok || got != v {
			t.Errorf("%s = %#v, want %#v", k, got, v)
		}
	}
	version := regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	for _, k := range []string{"CFBundleShortVersionString", "CFBundleVersion"} {
		s, _ := doc[k].(string)
		if !version.MatchString(s) {
			t.Errorf("%s = %#v, want a major.minor.patch string", k, doc[k])
		}
	}
	if s, _ := doc["LSMinimumSystemVersion"].(string); s < "11.0" || !regexp.MustCompile(`^\d+\.\d+$`).MatchString(s) {
		t.Errorf("LSMinimumSystemVersion %q, want 11.0 or later (first arm64 macOS)", s)
	}
}

// desktopEntry parses the [Desktop Entry] group of a .desktop file: enough
// of the Desktop Entry Specification for these checks (groups, key=value,
// comments and blank lines; no localized keys are expected).
func desktopEntry(data []byte) (map[string]string, error) {
	entry := map[string]string{}
	group := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			group = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: no '=' in %q", n, line)
			}
			k = strings.TrimSpace(k)
			if group == "" {
				return nil, fmt.Errorf("line %d: key %q before any group", n, k)
			}
			if group != "Desktop Entry" {
				continue
			}
			if _, dup := entry[k]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", n, k)
			}
			entry[k] = strings.TrimSpace(v)
		}
	}
	return entry, sc.Err()
}

func TestDesktopEntryParser(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		bad      bool
	}{
		{"keys", "# c\n[Desktop Entry]\nName = x\n\nExec=y z\n[Desktop Action new]\nName=other\n", map[string]string{"Name": "x", "Exec": "y z"}, false},
		{"no equals", "[Desktop Entry]\nName\n", nil, true},
		{"before group", "Name=x\n", nil, true},
		{"duplicate", "[Desktop Entry]\nName=x\nName=y\n", nil, true},
	}
	for _, tc := range tests {
		got, err := desktopEntry([]byte(tc.in))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestDesktopFile(t *testing.T) {
	data, err := os.ReadFile("linux/ruvllm.desktop")
	if err != nil {
		t.Fatal(err)
	}
	entry, err := desktopEntry(data)
	if err != nil {
		t.Fatalf("parse ruvllm.desktop: %v", err)
	}
	want := map[string]string{
		"Type":           "Application",
		"Name":           "ruvllm",
		"Exec":           executable,
		"TryExec":        executable,
		"StartupWMClass": executable,
		"Icon":           iconName,
		"Terminal":       "false",
	}
	for k, v := range want {
		if entry[k] != v {
			t.Errorf("%s = %q, want %q", k, entry[k], v)
		}
	}
	if c := entry["Categories"]; c == "" || !strings.HasSuffix(c, ";") {
		t.Errorf("Categories %q, want a ';'-terminated list", c)
	}
	// Icon=ruvllm resolves through the hicolor theme, installed from
	// build/icons/ruvllm-<N>.png as hicolor/<N>x<N>/apps/ruvllm.png.
	for _, n := range []int{16, 32, 48, 64, 128, 256, 512} {
		if _, err := os.Stat(fmt.Sprintf("icons/%s-%d.png", iconName, n)); err != nil {
			t.Errorf("icon for Icon=%s: %v", iconName, err)
		}
	}
}

// TestDesktopFileValidates runs the reference validator (Debian package
// desktop-file-utils) over the file.
func TestDesktopFileValidates(t *testing.T) {
	bin, err := exec.LookPath("desktop-file-validate")
	if err != nil {
		t.Skip("desktop-file-validate not installed (apt-get install desktop-file-utils)")
	}
	out, err := exec.Command(bin, "linux/ruvllm.desktop").CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("desktop-file-validate: %v\n%s", err, out)
	}
}

// TestWailsProject checks the root wails.json (Wails v2's project file,
// read by `wails build` and `wails dev`) against the rest of the
// packaging: the executable name, the build tags main.go needs, the
// frontend commands and directory, and the version of Info.plist.
func TestWailsProject(t *testing.T) {
	data, err := os.ReadFile("../wails.json")
	if err != nil {
		t.Fatal(err)
	}
	// The fields of Wails v2.16's internal/project.Project that matter.
	var p struct {
		Name           string `json:"name"`
		OutputFilename string `json:"outputfilename"`
		BuildDir       string `json:"build:dir"`
		BuildTags      string `json:"build:tags"`
		FrontendDir    string `json:"frontend:dir"`
		Install        string `json:"frontend:install"`
		Build          string `json:"frontend:build"`
		DevBuild       string `json:"frontend:dev:build"`
		DevWatcher     string `json:"frontend:dev:watcher"`
		DevServerURL   string `json:"frontend:dev:serverUrl"`
		WailsJSDir     string `json:"wailsjsdir"`
		Info           struct {
			ProductName    string `json:"productName"`
			ProductVersion string `json:"productVersion"`
		} `json:"info"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("wails.json: %v", err)
	}
	if p.OutputFilename != executable || p.Name != "ruvllm" || p.Info.ProductName != "ruvllm" {
		t.Errorf("names: %+v", p)
	}
	if p.BuildDir != "build" || p.FrontendDir != "frontend" || p.WailsJSDir != "./frontend/wailsjs" {
		t.Errorf("directories: build %q, frontend %q, wailsjs %q", p.BuildDir, p.FrontendDir, p.WailsJSDir)
	}
	// main.go builds with the desktop tag (or Wails' bindings tag, which
	// it builds the binding generator with, dropping desktop); Linux's
	// WebKitGTK 4.1 needs webkit2_41 (Wails adds production or dev).
	main, err := os.ReadFile("../main.go")
	if err != nil {
		t.Fatal(err)
	}
	tags := strings.Split(p.BuildTags, ",")
	if !bytes.HasPrefix(main, []byte("//go:build desktop || bindings\n")) || !slices.Contains(tags, "desktop") || !slices.Contains(tags, "webkit2_41") {
		t.Errorf("build:tags %q for main.go's constraint", p.BuildTags)
	}
	// The frontend commands are the Makefile's.
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{p.Install, p.Build} {
		if !bytes.Contains(mk, []byte(c)) {
			t.Errorf("frontend command %q is not the Makefile's", c)
		}
	}
	if p.DevBuild != p.Build || p.DevWatcher != "npx vite" || p.DevServerURL != "auto" {
		t.Errorf("dev commands: build %q, watcher %q, server %q", p.DevBuild, p.DevWatcher, p.DevServerURL)
	}
	var plistDoc map[string]any
	pl, err := os.ReadFile("darwin/Info.plist")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plist.Unmarshal(pl, &plistDoc); err != nil {
		t.Fatal(err)
	}
	if v := plistDoc["CFBundleShortVersionString"]; v != p.Info.ProductVersion {
		t.Errorf("productVersion %q, Info.plist %v", p.Info.ProductVersion, v)
	}
}
