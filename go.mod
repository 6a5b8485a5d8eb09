module github.com/airlockdev/airlock

go 1.26
