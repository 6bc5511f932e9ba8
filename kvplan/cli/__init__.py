"""kvplan's command line: parse options, call the library, hand results to report.output."""
