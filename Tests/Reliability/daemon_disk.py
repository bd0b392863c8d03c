def run_disk(args, check):
    raise NotImplementedError
