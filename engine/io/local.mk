# engine/io: placeholder until the component lands
