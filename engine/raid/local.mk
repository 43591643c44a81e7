# engine/raid: placeholder until the component lands
