#!/bin/sh
# identity_alignment.sh IN OUT: the toy corpus's pairs (source word wK -> target word vK) with their
# gold links i-i as a third column, for the commands that read gold alignments.
awk -F '\t' '{ n = split($1, w, " "); l = ""; for (i = 0; i < n; i++) l = l (i ? " " : "") i "-" i; print $0 "\t" l }' "$1" > "$2"
