"""What planning raises: a spec the IR accepted but no codec can be planned from. Its own module
so that every planner (plan.py and the planners it calls) can raise it without importing plan."""


class PlanError(ValueError):
    pass
