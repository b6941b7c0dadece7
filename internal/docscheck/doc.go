// Package docscheck keeps the docs' maps true: its test reads README.md,
// CONTRIBUTING.md and docs/*.md and fails when one of them names, in
// backticks, a repository file that does not exist, names after such a file
// (`path/file.go`: `fn`, `other`) a function or type the file does not
// declare, or links to a file or a section heading that is not there. It
// also holds each doc to its length limit (README 350 lines, the others
// 600).
//
// It has no code of its own; no program imports it.
package docscheck
