"""The device path: ``--allocate`` and ``--budget-from-device`` (reference §4.5, §11 item 5).

* ``probe``   free memory on ``cpu`` / ``cuda[:N]`` and the ``--budget-from-device`` budget;
              the only place torch is imported (``import_torch``, called inside functions);
* ``views``   view geometry, pure Python: the tensors and strided views of one worker;
* ``verify``  allocate those tensors with torch, write and read every page, scan, free.

Importing this package (or any module of it) never imports torch.
"""

from kvplan.device.probe import budget_from_device, device_kv_budget
from kvplan.device.verify import allocate_and_verify
from kvplan.errors import DeviceDoesNotFitError

__all__ = ["DeviceDoesNotFitError", "allocate_and_verify", "budget_from_device", "device_kv_budget"]
