def run_faults(args, check):
    raise NotImplementedError
