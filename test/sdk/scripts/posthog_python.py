"""The real posthog Python library from PyPI against a live Inlet: capture, set, set_once, alias, group_identify; errors it saw printed as JSON."""
import json
import sys

from posthog import Posthog

key, host = sys.argv[1], sys.argv[2]
errors = []
client = Posthog(key, host=host, sync_mode=True, on_error=lambda e, batch: errors.append(str(e)))
client.capture("order_completed", distinct_id="py_user", properties={"total": 30}, groups={"company": "acme"})
client.set(distinct_id="py_user", properties={"plan": "team"})
client.set_once(distinct_id="py_user", properties={"first_plan": "free"})
client.set_once(distinct_id="py_user", properties={"first_plan": "pro"})
client.alias("py_anon", "py_user")
client.group_identify("company", "acme", {"seats": 40})
client.shutdown()
print(json.dumps(errors))
