// Command upstream is the differential-testing oracle of cvo: it loads a release payload the way
// the upstream Cluster Version Operator does and prints, for every document, upstream's inclusion
// decision and reason, the document's raw JSON, and the payload's version hash.
//
// Parsing (k8s.io/apimachinery's YAMLOrJSONDecoder, sigs.k8s.io/yaml over go-yaml), the raw JSON
// and every inclusion check with its message come from openshift/library-go's pkg/manifest, the
// package the CVO itself calls. The directory walk, the text/template rendering of manifests/ and
// the hash follow the CVO's pkg/payload LoadUpdate (spec §1.6, §1.7): that module cannot be fetched
// from the Go module proxy here at any version that builds against a current library-go, so this
// file carries that thin glue; see hack/upstream/README.md.
//
//	upstream explain --payload DIR [inclusion flags]    JSON: every document and the version hash
//	upstream render  --payload DIR --output-dir DIR     DIR/manifests/<file>: kept documents' raw
//	                                                    JSON joined by "\n---\n" (upstream render)
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/blang/semver/v4"
	configv1 "github.com/openshift/api/config/v1"
	imagev1 "github.com/openshift/api/image/v1"
	"github.com/openshift/library-go/pkg/manifest"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
)

const defaultClusterProfile = "self-managed-high-availability"

// inclusion is cvo's InclusionConfig (camelCase JSON); a nil field disables that filter, as
// upstream's nil arguments to Include do.
type inclusion struct {
	ExcludeIdentifier        *string                      `json:"excludeIdentifier,omitempty"`
	RequiredFeatureSet       *string                      `json:"requiredFeatureSet,omitempty"`
	Profile                  *string                      `json:"profile,omitempty"`
	Capabilities             *capabilityFilter            `json:"capabilities,omitempty"`
	Overrides                []configv1.ComponentOverride `json:"overrides,omitempty"`
	EnabledFeatureGates      *[]string                    `json:"enabledFeatureGates,omitempty"`
	MajorVersion             *uint64                      `json:"majorVersion,omitempty"`
	AllowUnknownCapabilities bool                         `json:"allowUnknownCapabilities,omitempty"`
}

type capabilityFilter struct {
	KnownCapabilities   []configv1.ClusterVersionCapability `json:"knownCapabilities"`
	EnabledCapabilities []configv1.ClusterVersionCapability `json:"enabledCapabilities"`
}

func (c *inclusion) gates() sets.Set[string] {
	if c.EnabledFeatureGates == nil {
		return nil
	}
	return sets.New[string](*c.EnabledFeatureGates...)
}

func (c *inclusion) include(m *manifest.Manifest) error {
	var caps *configv1.ClusterVersionCapabilitiesStatus
	if c.Capabilities != nil {
		caps = &configv1.ClusterVersionCapabilitiesStatus{
			KnownCapabilities:   c.Capabilities.KnownCapabilities,
			EnabledCapabilities: c.Capabilities.EnabledCapabilities,
		}
	}
	return m.IncludeAllowUnknownCapabilities(c.ExcludeIdentifier, c.RequiredFeatureSet, c.Profile,
		caps, c.Overrides, c.gates(), c.MajorVersion, c.AllowUnknownCapabilities)
}

// loadTime is what LoadUpdate filters with: no capabilities, no overrides (spec §1.7).
func (c *inclusion) loadTime() inclusion {
	l := *c
	l.Capabilities = nil
	l.Overrides = nil
	l.AllowUnknownCapabilities = false
	return l
}

type document struct {
	Dir      string  `json:"dir"`
	File     string  `json:"file"`
	Index    int     `json:"index"`
	Included bool    `json:"included"`
	Reason   *string `json:"reason"`
	Raw      string  `json:"raw"`
}

type output struct {
	Version      string     `json:"version,omitempty"`
	ReleaseImage string     `json:"releaseImage"`
	VersionHash  string     `json:"versionHash"`
	Documents    []document `json:"documents"`
	Warnings     []string   `json:"warnings"`
}

// renderConfig is what manifests/ templates see (the CVO's manifestRenderConfig).
type renderConfig struct {
	ReleaseImage   string
	ClusterProfile string
	Images         map[string]string
}

type loaded struct {
	dir       string
	manifests []manifest.Manifest
	indexes   []int
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "explain" && os.Args[1] != "render") {
		fmt.Fprintln(os.Stderr, "usage: upstream explain|render --payload DIR [flags]; -h for flags")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	payloadDir := fs.String("payload", "", "payload root: manifests/ and release-manifests/")
	releaseImage := fs.String("release-image", "", "pullspec for {{.ReleaseImage}} (default: quay.io/openshift-release-dev/ocp-release:<version>)")
	outputDir := fs.String("output-dir", "", "render: output root; documents go to DIR/manifests/")
	inclusionFile := fs.String("inclusion", "", "a JSON InclusionConfig as cvo --inclusion reads it; replaces the flags below")
	exclude := fs.String("exclude", "", "exclude manifests annotated exclude.release.openshift.io/ID=true (unset: no exclusion filter)")
	featureSet := fs.String("feature-set", "", "required feature set (\"\" is Default)")
	featureGates := fs.String("feature-gates", "", "enabled feature gates, comma-separated")
	profile := fs.String("cluster-profile", defaultClusterProfile, "cluster profile")
	known := fs.String("known-capabilities", "", "known capabilities, comma-separated (with --enabled-capabilities: enables the capability filter)")
	enabled := fs.String("enabled-capabilities", "", "enabled capabilities, comma-separated")
	major := fs.String("major-version", "", "cluster major version (default: release-metadata's)")
	allowUnknown := fs.Bool("allow-unknown-capabilities", false, "IncludeAllowUnknownCapabilities")
	_ = fs.Parse(os.Args[2:])
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *payloadDir == "" {
		die("--payload is required")
	}

	var config inclusion
	if *inclusionFile != "" {
		data, err := os.ReadFile(*inclusionFile)
		if err != nil {
			die("%v", err)
		}
		decoder := json.NewDecoder(bytes.NewReader(data))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&config); err != nil {
			die("%s: %v", *inclusionFile, err)
		}
	} else {
		if set["exclude"] {
			config.ExcludeIdentifier = exclude
		}
		config.RequiredFeatureSet = featureSet
		config.Profile = profile
		gates := list(*featureGates)
		config.EnabledFeatureGates = &gates
		if set["known-capabilities"] || set["enabled-capabilities"] {
			config.Capabilities = &capabilityFilter{
				KnownCapabilities:   capabilities(*known),
				EnabledCapabilities: capabilities(*enabled),
			}
		}
		config.AllowUnknownCapabilities = *allowUnknown
	}

	releaseDir := filepath.Join(*payloadDir, "release-manifests")
	version, images, warnings := metadata(releaseDir)
	if config.MajorVersion == nil && *inclusionFile == "" {
		if set["major-version"] {
			v, err := strconv.ParseUint(*major, 10, 64)
			if err != nil {
				die("--major-version: %v", err)
			}
			config.MajorVersion = &v
		} else if version != nil {
			config.MajorVersion = &version.Major
		}
	}
	image := *releaseImage
	if image == "" {
		tag := "unknown"
		if version != nil {
			tag = version.String()
		}
		image = "quay.io/openshift-release-dev/ocp-release:" + tag
	}
	templateProfile := defaultClusterProfile
	if config.Profile != nil && *config.Profile != "" {
		templateProfile = *config.Profile
	}
	render := renderConfig{ReleaseImage: image, ClusterProfile: templateProfile, Images: images}

	var files []loaded
	var errs []string
	for _, task := range []struct {
		dir      string
		template bool
	}{{"manifests", true}, {"release-manifests", false}} {
		dirFiles, w, e := loadDir(filepath.Join(*payloadDir, task.dir), task.dir, task.template, mode == "render", render)
		files = append(files, dirFiles...)
		warnings = append(warnings, w...)
		errs = append(errs, e...)
	}
	if len(errs) > 0 {
		die("Error loading manifests from %s: %s", *payloadDir, strings.Join(errs, "; "))
	}

	load := config.loadTime()
	hash := fnv.New64()
	out := output{ReleaseImage: image, Documents: []document{}, Warnings: warnings}
	if version != nil {
		out.Version = version.String()
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, f := range files {
		var kept []string
		for i := range f.manifests {
			m := &f.manifests[i]
			if load.include(m) == nil {
				hash.Write(m.Raw)
			}
			doc := document{Dir: f.dir, File: m.OriginalFilename, Index: f.indexes[i], Included: true, Raw: string(m.Raw)}
			if err := config.include(m); err != nil {
				reason := err.Error()
				doc.Included = false
				doc.Reason = &reason
			} else {
				kept = append(kept, string(m.Raw))
			}
			out.Documents = append(out.Documents, doc)
		}
		if mode == "render" && len(kept) > 0 {
			target := filepath.Join(*outputDir, "manifests")
			if err := os.MkdirAll(target, 0o755); err != nil {
				die("%v", err)
			}
			name := f.manifests[0].OriginalFilename
			if err := os.WriteFile(filepath.Join(target, name), []byte(strings.Join(kept, "\n---\n")), 0o644); err != nil {
				die("%v", err)
			}
		}
	}
	out.VersionHash = base64.URLEncoding.EncodeToString(hash.Sum(nil))
	if mode == "render" {
		if *outputDir == "" {
			die("render: --output-dir is required")
		}
		fmt.Printf("versionHash %s\n", out.VersionHash)
		return
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", " ")
	if err := encoder.Encode(out); err != nil {
		die("%v", err)
	}
}

// loadDir reads one payload directory in name order, as LoadUpdate does: manifest extensions
// only, subdirectories and the metadata files skipped, manifests/ rendered as templates first.
func loadDir(path, dir string, isTemplate, strict bool, render renderConfig) ([]loaded, []string, []string) {
	entries, err := os.ReadDir(path)
	if os.IsNotExist(err) {
		return nil, []string{dir + "/ is missing"}, nil
	}
	if err != nil {
		return nil, nil, []string{err.Error()}
	}
	var out []loaded
	var warnings, errs []string
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || name == "release-metadata" || name == "image-references" {
			continue
		}
		switch filepath.Ext(name) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		raw, err := os.ReadFile(filepath.Join(path, name))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if isTemplate {
			rendered, err := renderTemplate(render, raw)
			if err != nil && strict {
				errs = append(errs, fmt.Sprintf("render template %s from %s: %v", name, dir, err))
				continue
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("Skipping manifest %s: template rendering failed (may require newer CVO): %v", name, err))
				continue
			}
			raw = rendered
		}
		ms, err := manifest.ParseManifests(bytes.NewReader(raw))
		if err != nil {
			errs = append(errs, fmt.Sprintf("parse %s: %v", name, err))
			continue
		}
		indexes := make([]int, len(ms))
		for i := range ms {
			ms[i].OriginalFilename = name
			indexes[i] = i
		}
		if len(ms) > 0 {
			out = append(out, loaded{dir: dir, manifests: ms, indexes: indexes})
		}
	}
	return out, warnings, errs
}

func renderTemplate(config renderConfig, raw []byte) ([]byte, error) {
	tmpl, err := template.New("manifest").Parse(string(raw))
	if err != nil {
		return nil, fmt.Errorf("failed to parse manifest: %w", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, config); err != nil {
		return nil, fmt.Errorf("failed to execute template: %w", err)
	}
	return buf.Bytes(), nil
}

// metadata reads release-metadata (the version) and image-references (the images templates see).
// Unlike LoadUpdate, both are optional, so that plain corpora load.
func metadata(releaseDir string) (*semver.Version, map[string]string, []string) {
	var warnings []string
	var version *semver.Version
	if data, err := os.ReadFile(filepath.Join(releaseDir, "release-metadata")); err == nil {
		var md struct {
			Kind    string `json:"kind"`
			Version string `json:"version"`
		}
		if err := json.Unmarshal(data, &md); err != nil {
			die("unmarshal Cincinnati metadata: %v", err)
		}
		v, err := semver.Parse(md.Version)
		if err != nil {
			die("Cincinnati metadata version %q is not a valid semantic version: %v", md.Version, err)
		}
		version = &v
	} else {
		warnings = append(warnings, "release-manifests/release-metadata is missing")
	}
	images := map[string]string{}
	if data, err := os.ReadFile(filepath.Join(releaseDir, "image-references")); err == nil {
		var stream imagev1.ImageStream
		if err := yaml.Unmarshal(data, &stream); err != nil {
			die("unmarshal image-references: %v", err)
		}
		for _, tag := range stream.Spec.Tags {
			if tag.From != nil {
				images[tag.Name] = tag.From.Name
			}
		}
	} else {
		warnings = append(warnings, "release-manifests/image-references is missing")
	}
	return version, images, warnings
}

func list(s string) []string {
	out := []string{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	sort.Strings(out)
	return out
}

func capabilities(s string) []configv1.ClusterVersionCapability {
	out := []configv1.ClusterVersionCapability{}
	for _, c := range list(s) {
		out = append(out, configv1.ClusterVersionCapability(c))
	}
	return out
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "upstream: "+format+"\n", args...)
	os.Exit(1)
}
