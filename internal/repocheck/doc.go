// Package repocheck holds tests of the repository as a whole rather than of
// one package. Among them: the README stays a short front door, docs/README.md indexes every
// document, relative links in the Markdown point to files that exist, and
// Go comments point to sections of docs/ instead of citing seed or issue
// numbers, which a reader of the code does not have; no exported
// identifier of a public package names an internal type; functions stay
// short. It has no non-test code.
package repocheck
