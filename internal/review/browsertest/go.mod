module github.com/airlockdev/airlock/internal/review/browsertest

go 1.26.0

replace github.com/airlockdev/airlock => ../../..

require (
	github.com/airlockdev/airlock v0.0.0-00010101000000-000000000000
	github.com/chromedp/chromedp v0.23.1
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
