# engine/lock: placeholder until the component lands
