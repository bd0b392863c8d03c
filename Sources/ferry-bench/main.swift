DAVBenchmark.main()
